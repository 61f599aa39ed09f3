// What a clock reading and a system call cost on this machine: printed into the bundle's
// machine.txt (bench/bundle.sh), since pollwise reads the clock per I/O and t/io_uring does not.
#include <stdio.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <x86intrin.h>
static double ns(struct timespec a, struct timespec b){return (b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec);}
int main(){
  struct timespec a,b,t; volatile uint64_t s=0; int N=5000000;
  clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<N;i++){clock_gettime(CLOCK_MONOTONIC,&t); s+=t.tv_nsec;} clock_gettime(CLOCK_MONOTONIC,&b);
  printf("clock_gettime(MONOTONIC) %.1f ns\n", ns(a,b)/N);
  clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<N;i++){s+=__rdtsc();} clock_gettime(CLOCK_MONOTONIC,&b);
  printf("rdtsc %.1f ns\n", ns(a,b)/N);
  unsigned aux; clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<N;i++){s+=__rdtscp(&aux);} clock_gettime(CLOCK_MONOTONIC,&b);
  printf("rdtscp %.1f ns\n", ns(a,b)/N);
  N=1000000; clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<N;i++){clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t); s+=t.tv_nsec;} clock_gettime(CLOCK_MONOTONIC,&b);
  printf("clock_gettime(THREAD_CPUTIME) %.1f ns\n", ns(a,b)/N);
  clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<N;i++){s+=syscall(SYS_getppid);} clock_gettime(CLOCK_MONOTONIC,&b);
  printf("getppid syscall %.1f ns\n", ns(a,b)/N);
  return 0;
}
