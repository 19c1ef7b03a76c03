//! The daemon's data ports: which it may use (its `--data-ports` range, or any the kernel
//! picks) and which a test holds. A test gets a port only if it is one of the daemon's and no
//! other test holds it; the ports go back when the test ends (`PortLease` is dropped).

use std::collections::BTreeSet;
use std::io;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct PortPool {
    /// The ports the daemon owns (inclusive); None: ports the kernel picks (port 0).
    pub range: Option<(u16, u16)>,
    held: Mutex<BTreeSet<u16>>,
}

impl PortPool {
    pub fn new(range: Option<(u16, u16)>) -> PortPool {
        PortPool { range, held: Mutex::new(BTreeSet::new()) }
    }

    /// Ports some test holds now.
    pub fn held(&self) -> Vec<u16> {
        self.held.lock().expect("unpoisoned").iter().copied().collect()
    }
}

/// The ports one test holds.
pub struct PortLease {
    pool: Arc<PortPool>,
    ports: Vec<u16>,
}

impl PortLease {
    pub fn new(pool: Arc<PortPool>) -> PortLease {
        PortLease { pool, ports: Vec::new() }
    }

    /// A socket on a port of the pool: `asked` if the client named one (it must be the
    /// daemon's and free), else the first free one of the range, else one the kernel picks.
    /// `bind(port)` opens the socket and returns it with the port it got.
    pub fn claim<T>(
        &mut self,
        asked: Option<u16>,
        mut bind: impl FnMut(u16) -> io::Result<(T, u16)>,
    ) -> Result<(T, u16), String> {
        let mut held = self.pool.held.lock().expect("unpoisoned");
        let range = self.pool.range;
        let (socket, port) = match (asked, range) {
            (Some(p), None) => {
                return Err(format!(
                    "data port {p}: this daemon owns no fixed data ports (it picks free ones itself; start it with --data-ports LOW-HIGH to give it a range)"
                ))
            }
            (Some(p), Some((lo, hi))) if !(lo..=hi).contains(&p) => {
                return Err(format!("data port {p} is not one of this daemon's data ports ({lo}-{hi})"))
            }
            (Some(p), _) if held.contains(&p) => return Err(format!("data port {p} is held by another test")),
            (Some(p), _) => bind(p).map_err(|e| format!("data port {p}: {e}"))?,
            (None, None) => bind(0).map_err(|e| format!("data port: {e}"))?,
            (None, Some((lo, hi))) => {
                let mut found = None;
                for p in (lo..=hi).filter(|p| !held.contains(p)) {
                    match bind(p) {
                        Ok(bound) => {
                            found = Some(bound);
                            break;
                        }
                        // Used by another program on this host: try the next.
                        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => continue,
                        Err(e) => return Err(format!("data port {p}: {e}")),
                    }
                }
                found.ok_or_else(|| format!("every data port of this daemon ({lo}-{hi}) is in use; try again when a test ends"))?
            }
        };
        if range.is_some() {
            held.insert(port);
            self.ports.push(port);
        }
        Ok((socket, port))
    }
}

impl Drop for PortLease {
    fn drop(&mut self) {
        let mut held = self.pool.held.lock().expect("unpoisoned");
        for p in &self.ports {
            held.remove(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(port: u16) -> io::Result<((), u16)> {
        Ok(((), port))
    }

    #[test]
    fn a_test_gets_only_the_daemons_free_ports_and_gives_them_back() {
        let pool = Arc::new(PortPool::new(Some((6000, 6001))));
        let mut a = PortLease::new(pool.clone());
        assert_eq!(a.claim(None, fake).unwrap().1, 6000);
        assert!(a.claim(Some(7000), fake).unwrap_err().contains("not one of this daemon's data ports (6000-6001)"));
        let mut b = PortLease::new(pool.clone());
        assert!(b.claim(Some(6000), fake).unwrap_err().contains("held by another test"));
        assert_eq!(b.claim(None, fake).unwrap().1, 6001);
        assert!(b.claim(None, fake).unwrap_err().contains("every data port"));
        drop(a);
        assert_eq!(pool.held(), [6001]);
        assert_eq!(b.claim(Some(6000), fake).unwrap().1, 6000, "released when the test ended");
        let unranged = Arc::new(PortPool::new(None));
        assert!(PortLease::new(unranged).claim(Some(6000), fake).unwrap_err().contains("owns no fixed data ports"));
    }
}
