# bash completion for pollwise, generated from its option table (`pollwise completions bash`).
# Source it, or install it as /usr/share/bash-completion/completions/pollwise.

_pollwise() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i
  local commands="run compare plot advise scenario calibrate exec help man completions"
  local scenarios="hybrid-contention shared-poller fairness idle-sources slow-handler"
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      scenario) cmd=scenario ;;
      *) if [[ $cmd == scenario ]]; then cmd=${COMP_WORDS[i]}; break; elif [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; fi ;;
    esac
  done
  if [[ $cur == --*=* ]]; then
    local key=${cur%%=*} val=${cur#*=} words=
    case ${key//-/_} in
      __rw|__readwrite) words="read write randread randwrite randrw rw readwrite trim randtrim trimwrite randtrimwrite" ;;
      __direct) words="0 1" ;;
      __allow_mounted_write) words="0 1" ;;
      __verify) words="0 none crc32c crc32c-intel meta md5 crc32 sha1 sha256 xxhash" ;;
      __group_reporting) words="0 1" ;;
      __thread) words="0 1" ;;
      __stonewall|__wait_for_previous) words="0 1" ;;
      __new_group) words="0 1" ;;
      __buffered) words="0 1" ;;
      __rate_process) words="linear poisson" ;;
      __continue_on_error) words="none read write io verify all 0 1" ;;
      __end_fsync) words="0 1" ;;
      __fsync_on_close) words="0 1" ;;
      __invalidate) words="0 1" ;;
      __noatime) words="0 1" ;;
      __sync) words="0 1 none sync dsync" ;;
      __fill_device|__fill_fs) words="0 1" ;;
      __create_serialize) words="0 1" ;;
      __zero_buffers) words="0 1" ;;
      __refill_buffers) words="0 1" ;;
      __scramble_buffers) words="0 1" ;;
      __dedupe_mode) words="repeat working_set" ;;
      __dedupe_global) words="0 1" ;;
      __exitall) words="0 1" ;;
      __exit_what) words="group stonewall all" ;;
      __exitall_on_error) words="0 1" ;;
      __latency_run) words="0 1" ;;
      __zonemode) words="none strided zbd" ;;
      __do_verify) words="0 1" ;;
      __verify_state_save) words="0 1" ;;
      __verify_state_load) words="0 1" ;;
      __verify_fatal) words="0 1" ;;
      __verify_dump) words="0 1" ;;
      __experimental_verify) words="0 1" ;;
      __norandommap) words="0 1" ;;
      __random_generator) words="tausworthe lfsr tausworthe64" ;;
      __randrepeat) words="0 1" ;;
      __replay_no_stall) words="0 1" ;;
      __per_job_logs) words="0 1" ;;
      __gtod_reduce) words="0 1" ;;
      __parse_only) words="0 1" ;;
      __readonly) words="0 1" ;;
      __time_based) words="0 1" ;;
      __ioengine) words="io_uring libaio posixaio sync psync vsync pvsync pvsync2 null nop sim" ;;
      __userspace_reap) words="0 1" ;;
      __registerfiles) words="0 1" ;;
      __fixedbufs) words="0 1" ;;
      __registered_ring) words="0 1" ;;
      __sqthread_poll) words="0 1" ;;
      __sqthread_share) words="0 1" ;;
      __hipri) words="0 1" ;;
      __hybrid_iopoll) words="0 1" ;;
      __coop_taskrun) words="0 1" ;;
      __defer_taskrun) words="0 1" ;;
      __single_issuer) words="0 1" ;;
      __submit_mode) words="with_wait separate" ;;
      __mode) words="interrupt poll hybrid adaptive auto khybrid dpas" ;;
      __modes) words="interrupt poll hybrid adaptive auto khybrid dpas iopoll hybrid_iopoll" ;;
      __hybrid_stat) words="auto mean min p10" ;;
      __variants) words="separate attach_wq pollwise" ;;
      __poller_wait) words="adaptive poll interrupt auto" ;;
      __fdmon) words="io_uring uring epoll" ;;
      __reactor_wait) words="adaptive poll interrupt auto" ;;
      __output_format) words="normal json json+ terse" ;;
      __minimal) words="0 1" ;;
      __slat_percentiles) words="0 1" ;;
      __clat_percentiles) words="0 1" ;;
      __lat_percentiles) words="0 1" ;;
      __log_prio) words="0 1" ;;
      __log_offset) words="0 1" ;;
      __eta) words="auto always never" ;;
      __showcmd) words="0 1" ;;
      __help) words="0 1" ;;
      __version) words="0 1" ;;
    esac
    if [[ -n $words ]]; then
      COMPREPLY=($(compgen -P "$key=" -W "$words" -- "$val"))
    else
      compopt -o default 2>/dev/null
      COMPREPLY=($(compgen -P "$key=" -f -- "$val"))
    fi
    return
  fi
  local opts=
  case $cmd in
    '') COMPREPLY=($(compgen -W "$commands" -- "$cur")); [[ $cur == -* ]] && opts=run || return ;;
    scenario) COMPREPLY=($(compgen -W "$scenarios" -- "$cur")); return ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    completions) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")); return ;;
    *) opts=$cmd ;;
  esac
  local words
  case ${opts:-run} in
    run) words="--allow_mounted_write --auto_slack= --aux_path= --blockalign= --bs= --bsrange= --bssplit= --buffer_compress_percentage= --buffer_pattern= --buffered --clat_percentiles --cmdhelp --cmdprio= --cmdprio_bssplit= --cmdprio_class= --cmdprio_percentage= --continue_on_error= --coop_taskrun --cpus_allowed= --create_serialize --dedupe_global --dedupe_mode= --dedupe_percentage= --dedupe_working_set_percentage= --defer_taskrun --description= --direct --directory= --do_verify --end_fsync --eta= --eta_newline= --exit_what= --exitall --exitall_on_error --experimental_verify --fault= --fdatasync= --file_service_type= --filename= --filename_format= --filesize= --fill_device --fixedbufs --flow= --flow_id= --flow_sleep= --fsync= --fsync_on_close --group_reporting --gtod_reduce --help --hipri --hybrid_fraction= --hybrid_iopoll --hybrid_stat= --invalidate --io_size= --iodepth= --iodepth_batch_complete_min= --iodepth_batch_submit= --ioengine= --lat_percentiles --latency_percentile= --latency_run --latency_target= --latency_window= --log_avg_msec= --log_offset --log_prio --loops= --minimal --mode= --name= --new_group --noatime --norandommap --nrfiles= --number_ios= --numjobs= --offset= --offset_increment= --output= --output_format= --parse_only --per_job_logs --percentile_list= --platform= --poll_grow= --poll_max_ns= --poll_shrink= --prio= --prioclass= --ramp_time= --random_distribution= --random_generator= --randrepeat --randseed= --rate= --rate_iops= --rate_iops_min= --rate_process= --ratecycle= --ratemin= --read_iolog= --readonly --refill_buffers --registered_ring --registerfiles --replay_no_stall --replay_redirect= --replay_time_scale= --runtime= --rw= --rwmixread= --rwmixwrite= --scramble_buffers --section= --showcmd --sim_latency= --single_issuer --size= --slat_percentiles --sqthread_idle= --sqthread_poll --sqthread_poll_cpu= --sqthread_share --startdelay= --status_interval= --steadystate= --steadystate_duration= --steadystate_ramp_time= --stonewall --submit_mode= --sync= --thinktime= --thinktime_blocks= --thinktime_spin= --thread --threads= --time_based --userspace_reap --verify= --verify_backlog= --verify_dump --verify_fatal --verify_interval= --verify_pattern= --verify_state_load --verify_state_save --version --wait_for= --write_auto_log --write_bw_log --write_iolog= --write_iops_log --write_lat_log --zero_buffers --zonemode= --zonerange= --zonesize= --zoneskip=" ;;
    compare) words="--allow_mounted_write --auto_slack= --blockalign= --bs= --bsrange= --bssplit= --buffer_compress_percentage= --buffer_pattern= --buffered --cmdhelp --cmdprio= --cmdprio_bssplit= --cmdprio_class= --cmdprio_percentage= --coop_taskrun --cpus_allowed= --create_serialize --dedupe_global --dedupe_mode= --dedupe_percentage= --dedupe_working_set_percentage= --defer_taskrun --description= --direct --directory= --do_verify --end_fsync --exit_what= --exitall --exitall_on_error --experimental_verify --fdatasync= --file_service_type= --filename= --filename_format= --filesize= --fill_device --fixedbufs --flow= --flow_id= --flow_sleep= --fsync= --fsync_on_close --group_reporting --gtod_reduce --help --hipri --hybrid_fraction= --hybrid_iopoll --hybrid_stat= --invalidate --io_size= --iodepth= --iodepth_batch_complete_min= --iodepth_batch_submit= --ioengine= --loops= --modes= --name= --new_group --noatime --norandommap --nrfiles= --number_ios= --numjobs= --offset= --offset_increment= --output= --output_format= --parse_only --platform= --plot= --poll_grow= --poll_max_ns= --poll_shrink= --prio= --prioclass= --ramp_time= --random_distribution= --random_generator= --randrepeat --randseed= --rate= --rate_iops= --rate_iops_min= --rate_process= --ratecycle= --ratemin= --refill_buffers --registered_ring --registerfiles --rounds= --runtime= --rw= --rwmixread= --rwmixwrite= --scramble_buffers --sim_latency= --single_issuer --size= --sqthread_idle= --sqthread_poll --sqthread_poll_cpu= --sqthread_share --startdelay= --stonewall --submit_mode= --sync= --thinktime= --thinktime_blocks= --thinktime_spin= --thread --threads= --time_based --userspace_reap --verify= --verify_backlog= --verify_dump --verify_fatal --verify_interval= --verify_pattern= --verify_state_load --verify_state_save --version --wait_for= --warmup= --zero_buffers --zonemode= --zonerange= --zonesize= --zoneskip=" ;;
    plot) words="--cmdhelp --help --out= --version" ;;
    advise) words="--allow_mounted_write --bs= --cmdhelp --direct --filename= --help --iodepth= --ioengine= --latency_target= --numjobs= --output= --output_format= --platform= --plot= --randseed= --rw= --rwmixread= --sim_latency= --size= --time= --version" ;;
    hybrid-contention) words="--allow_mounted_write --auto_slack= --batch= --bs= --cmdhelp --coop_taskrun --defer_taskrun --direct --filename= --fixedbufs --help --hipri --hybrid_fraction= --hybrid_iopoll --hybrid_stat= --ioengine= --modes= --name= --output= --output_format= --platform= --plot= --poll_grow= --poll_max_ns= --poll_shrink= --ramp_time= --randseed= --registered_ring --registerfiles --runtime= --rw= --rwmixread= --sim_latency= --single_issuer --size= --sqthread_idle= --sqthread_poll --sqthread_poll_cpu= --sqthread_share --thinktime= --threads= --userspace_reap --verify= --version" ;;
    shared-poller) words="--allow_mounted_write --auto_slack= --bs= --cmdhelp --coop_taskrun --defer_taskrun --direct --filename= --help --hipri --hybrid_fraction= --hybrid_iopoll --hybrid_stat= --iodepth= --mode= --name= --output= --output_format= --poll_grow= --poll_max_ns= --poll_shrink= --poller_batch= --poller_cpu= --poller_depth= --poller_idle_us= --poller_pass_limit= --poller_quantum= --poller_wait= --ramp_time= --randseed= --registered_ring --registerfiles --rings= --rounds= --runtime= --single_issuer --size= --sparse_interval= --sqthread_idle= --thinktime= --thinktime_blocks= --thinktime_spin= --userspace_reap --variants= --version" ;;
    fairness) words="--allow_mounted_write --auto_slack= --bs= --burst= --cmdhelp --direct --filename= --help --hybrid_fraction= --hybrid_stat= --iodepth= --mode= --name= --output= --output_format= --poll_grow= --poll_max_ns= --poll_shrink= --poller_batch= --poller_cpu= --poller_depth= --poller_idle_us= --poller_pass_limit= --poller_quantum= --poller_wait= --ramp_time= --randseed= --registered_ring --runtime= --size= --userspace_reap --version" ;;
    idle-sources) words="--active= --bs= --cmdhelp --direct --fdmon= --filename= --help --iodepth= --output= --output_format= --poll_grow= --poll_idle_ms= --poll_max_ns= --poll_shrink= --ramp_time= --randseed= --reactor_wait= --rounds= --runtime= --rw= --size= --sources= --version" ;;
    slow-handler) words="--bs= --cmdhelp --direct --fdmon= --filename= --handler_us= --help --iodepth= --output= --output_format= --poll_grow= --poll_max_ns= --poll_shrink= --ramp_time= --randseed= --reactor_wait= --rounds= --runtime= --rw= --size= --sources= --version" ;;
    *) words="--help" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _pollwise pollwise
