//! Traffic sources: the applications that write into a flow's send buffer. One file each.

pub mod bulk;
pub mod burst;
pub mod http;

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SourceSpec {
    Bulk(bulk::BulkConfig),
    Burst(burst::BurstConfig),
    Http(http::HttpConfig),
}

impl SourceSpec {
    pub fn start_ps(&self) -> crate::time::Time {
        match self {
            SourceSpec::Bulk(b) => b.start_ps,
            SourceSpec::Burst(b) => b.start_ps,
            SourceSpec::Http(h) => h.start_ps,
        }
    }

    pub fn stop_ps(&self) -> Option<crate::time::Time> {
        match self {
            SourceSpec::Bulk(b) => b.stop_ps,
            SourceSpec::Burst(b) => b.stop_ps,
            SourceSpec::Http(h) => h.stop_ps,
        }
    }
}
