//! Executable memory for compiled programs, W^X: mapped read+write, filled, then made
//! read+execute (never both writable and executable), unmapped on drop.

use crate::read::Error;

pub struct ExecMem {
    ptr: *mut u8,
    len: usize,
}

// The mapping is read-only once built; sharing it between threads shares only code.
unsafe impl Send for ExecMem {}
unsafe impl Sync for ExecMem {}

impl ExecMem {
    pub fn new(code: &[u8]) -> Result<ExecMem, Error> {
        let len = code.len().max(1);
        // SAFETY: an anonymous private mapping of `len` bytes; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::new(format!("JIT: mmap of {len} bytes failed: {}", std::io::Error::last_os_error())));
        }
        let mem = ExecMem { ptr: ptr as *mut u8, len };
        // SAFETY: the mapping is `len >= code.len()` bytes, writable, and ours alone.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), mem.ptr, code.len()) };
        // SAFETY: the same mapping, now read+execute only.
        if unsafe { libc::mprotect(ptr, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
            return Err(Error::new(format!("JIT: mprotect failed: {}", std::io::Error::last_os_error())));
        }
        Ok(mem)
    }

    pub fn ptr(&self) -> *const u8 {
        self.ptr
    }
}

impl Drop for ExecMem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}
