//! Aligned, zeroed, owned heap buffers (O_DIRECT wants 512- or 4096-byte alignment).

use std::alloc::{self, Layout};
use std::ptr::NonNull;

pub use crate::error::BufError;

/// A heap buffer with a given alignment (4096 for O_DIRECT), zero-filled, owned.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Mapped straight from the kernel (see [`maps`]) rather than from the allocator.
    mapped: bool,
}

/// Buffers of a page or more, aligned to at most a page, are mapped anonymously (see
/// [`maps`]).
fn maps(len: usize, align: usize) -> bool {
    // The kernel's pages are zero already and are only touched when first used: the allocator
    // zeroes an over-aligned block by writing it (32768 buffers of 128 KiB cost 4 GiB of
    // writes, and seconds, before the first request, and as long again to give back), and
    // pads it to its alignment (a 4 KiB buffer aligned to 4 KiB took 8 KiB of address space,
    // twice what a `ulimit -v` check counted). Adjacent mappings merge into one.
    let page = page_size();
    len >= page && align <= page
}

/// The page size (4096 where it cannot be read).
fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system and has no other effect.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.layout.size())
            .field("align", &self.layout.align())
            .finish()
    }
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to `align`, or why there can be none.
    pub fn try_new(len: usize, align: usize) -> Result<Self, BufError> {
        if len == 0 {
            return Err(BufError::Empty);
        }
        if !align.is_power_of_two() {
            return Err(BufError::Align(align));
        }
        let layout =
            Layout::from_size_align(len, align).map_err(|_| BufError::TooLarge { len, align })?;
        if maps(len, align) {
            // SAFETY: an anonymous private mapping of len (non-zero) bytes at an address the
            // kernel picks: it aliases nothing and is page-aligned (so aligned to `align`).
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(BufError::NoMemory(len));
            }
            let ptr = NonNull::new(p.cast::<u8>()).ok_or(BufError::NoMemory(len))?;
            return Ok(AlignedBuf {
                ptr,
                layout,
                mapped: true,
            });
        }
        // SAFETY: layout has a non-zero size (len >= 1).
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(BufError::NoMemory(len))?;
        Ok(AlignedBuf {
            ptr,
            layout,
            mapped: false,
        })
    }

    /// A zeroed buffer of `len` bytes aligned to `align`, for sizes fixed in the program.
    ///
    /// # Panics
    ///
    /// When [`try_new`](AlignedBuf::try_new) fails; use that for sizes that come from input.
    pub fn new(len: usize, align: usize) -> Self {
        match AlignedBuf::try_new(len, align) {
            Ok(b) => b,
            Err(BufError::NoMemory(_)) => alloc::handle_alloc_error(
                Layout::from_size_align(len, align).unwrap_or(Layout::new::<u8>()),
            ),
            Err(e) => panic!("AlignedBuf::new({len}, {align}): {e}"),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Whether the buffer is empty (never: the minimum is one byte).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The start of the buffer, for the kernel. Taking the pointer borrows the buffer only for
    /// the call: keeping the memory untouched while the kernel uses it is the caller's part.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialised (zeroed) bytes, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The buffer's bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: ptr is the start of a mapping of layout.size() bytes made in try_new,
            // unmapped once; nothing borrows it past self.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.layout.size()) };
            return;
        }
        // SAFETY: ptr was allocated with exactly this layout and is freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_buffers_are_errors_not_panics() {
        assert_eq!(AlignedBuf::try_new(0, 4096).unwrap_err(), BufError::Empty);
        assert_eq!(
            AlignedBuf::try_new(4096, 3).unwrap_err(),
            BufError::Align(3)
        );
        assert_eq!(
            AlignedBuf::try_new(4096, 0).unwrap_err(),
            BufError::Align(0)
        );
        assert!(matches!(
            AlignedBuf::try_new(usize::MAX - 10, 4096).unwrap_err(),
            BufError::TooLarge { .. }
        ));
        // More than the address space holds: the allocator says no, and so does try_new.
        assert_eq!(
            AlignedBuf::try_new(1 << 62, 4096).unwrap_err(),
            BufError::NoMemory(1 << 62)
        );
        let mut b = AlignedBuf::try_new(100, 512).unwrap();
        assert_eq!(b.len(), 100);
        assert_eq!(b.as_mut_ptr() as usize % 512, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }
}
