//! The optional shared secret: a challenge and response, never the secret itself on the wire.
//!
//! Each side sends a fresh 32-byte random nonce (getrandom(2)); the client proves it knows the
//! secret with HMAC-SHA256(secret, "fatpipe-probe client" | daemon nonce | client nonce), and
//! the daemon answers with HMAC-SHA256(secret, "fatpipe-probe daemon" | client nonce | daemon
//! nonce), so the client knows it reached a daemon that knows it too. A recorded exchange
//! cannot be replayed (the other side's nonce is new every time) and does not reveal the
//! secret. It authenticates the two ends when the connection opens; it does not encrypt or
//! sign what follows (tunnel the control connection, e.g. ssh -L, over a hostile network).

use crate::sha256::{constant_time_eq, hex, hmac_sha256, unhex};
use std::io;

pub const NONCE_BYTES: usize = 32;

/// A fresh random nonce, in hexadecimal.
pub fn nonce() -> io::Result<String> {
    let mut bytes = [0u8; NONCE_BYTES];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: getrandom writes at most the length given into the buffer.
        let n = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        filled += n as usize;
    }
    Ok(hex(&bytes))
}

/// The client's proof: (secret, daemon nonce, client nonce) -> hex MAC.
pub fn client_mac(secret: &[u8], daemon_nonce: &str, client_nonce: &str) -> String {
    hex(&hmac_sha256(secret, &[b"fatpipe-probe client", daemon_nonce.as_bytes(), client_nonce.as_bytes()]))
}

/// The daemon's proof.
pub fn daemon_mac(secret: &[u8], client_nonce: &str, daemon_nonce: &str) -> String {
    hex(&hmac_sha256(secret, &[b"fatpipe-probe daemon", client_nonce.as_bytes(), daemon_nonce.as_bytes()]))
}

/// Whether a MAC received in hexadecimal is the expected one (in constant time).
pub fn mac_matches(received: &str, expected: &str) -> bool {
    match (unhex(received), unhex(expected)) {
        (Some(a), Some(b)) => constant_time_eq(&a, &b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_fresh_and_macs_bind_both_nonces() {
        let (a, b) = (nonce().unwrap(), nonce().unwrap());
        assert_eq!(a.len(), 2 * NONCE_BYTES);
        assert_ne!(a, b);
        let mac = client_mac(b"s3cret", &a, &b);
        assert!(mac_matches(&mac, &client_mac(b"s3cret", &a, &b)));
        assert!(!mac_matches(&mac, &client_mac(b"s3cre7", &a, &b)), "another secret");
        assert!(!mac_matches(&mac, &client_mac(b"s3cret", &b, &a)), "nonces swapped");
        assert_ne!(mac, daemon_mac(b"s3cret", &b, &a), "the two directions differ");
        assert!(!mac_matches("not hex", &mac));
    }
}
