//! What a host tells the other end about itself (`HostInfo`), read from /proc.

use crate::protocol::HostInfo;
use fatpipe_emu::kernel::HOST_SYSCTLS;
use fatpipe_emu::netns;

impl HostInfo {
    /// This host, as the calling thread's network namespace sees it.
    pub fn local() -> HostInfo {
        let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
        HostInfo {
            software: format!("fatpipe {}", env!("CARGO_PKG_VERSION")),
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            available_congestion_control: fatpipe_emu::emulation::available_algorithms(),
            sysctls: HOST_SYSCTLS
                .iter()
                .filter_map(|&key| netns::read_sysctl(key).ok().map(|v| (key.to_string(), v)))
                .collect(),
            cap_net_admin: has_cap_net_admin(),
        }
    }

    /// A numeric sysctl's first value (e.g. net.core.rmem_max).
    pub fn sysctl_u64(&self, key: &str) -> Option<u64> {
        self.sysctls.get(key).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok())
    }
}

/// CAP_NET_ADMIN in the effective set: SO_SNDBUFFORCE / SO_RCVBUFFORCE are allowed.
pub fn has_cap_net_admin() -> bool {
    netns::has_capabilities(netns::CAP_NET_ADMIN)
}
