//! Third-party drivers ("plugins"): a component plus its manifest (`agmsg-driver.toml`), found under
//! agmsg's plugin directories, run only once the user trusts them, with what they declared AND the
//! user granted.
//!
//! - [`manifest`]: the manifest format (identity, contract version, requested capabilities).
//! - [`registry`]: discovery in agmsg's base order, and which candidate runs.
//! - [`trust`]: the trust file (pinned to path, component hash, consented and granted capabilities).

pub mod manifest;
pub mod registry;
pub mod trust;
