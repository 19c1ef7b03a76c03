//! Bounds-checked little-endian reads, and the one error type of this crate.

use std::fmt;

/// What went wrong reading, linking, loading or running an object: one line for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// A byte slice read at offsets, every read checked.
#[derive(Clone, Copy)]
pub struct Bytes<'a>(pub &'a [u8]);

fn short(at: usize) -> Error {
    Error::new(format!("truncated data: a read at byte {at} runs past the end"))
}

impl<'a> Bytes<'a> {
    pub fn slice(&self, at: usize, len: usize) -> Result<&'a [u8], Error> {
        self.0.get(at..at.checked_add(len).ok_or_else(|| short(at))?).ok_or_else(|| short(at))
    }
    pub fn u8(&self, at: usize) -> Result<u8, Error> {
        self.0.get(at).copied().ok_or_else(|| short(at))
    }
    pub fn u16(&self, at: usize) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.slice(at, 2)?.try_into().expect("2 bytes")))
    }
    pub fn u32(&self, at: usize) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.slice(at, 4)?.try_into().expect("4 bytes")))
    }
    pub fn u64(&self, at: usize) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.slice(at, 8)?.try_into().expect("8 bytes")))
    }
    /// The NUL-terminated UTF-8 string at `at`.
    pub fn cstr(&self, at: usize) -> Result<&'a str, Error> {
        let rest = self.0.get(at..).ok_or_else(|| short(at))?;
        let end = rest.iter().position(|&c| c == 0).ok_or_else(|| Error::new("unterminated string"))?;
        std::str::from_utf8(&rest[..end]).map_err(|_| Error::new("a name is not UTF-8"))
    }
}
