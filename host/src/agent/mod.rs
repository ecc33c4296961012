//! The agent-type axis as data: which agent runtimes agmsg knows (claude-code, codex, gemini, ...),
//! each described by agmsg's `type.conf` manifest and a command template.
//!
//! - [`manifest`]: agmsg's reader (never executed, first matching line, trimmed, one pair of quotes
//!   stripped, a missing key reads as empty), and the keys agmsg reads.
//! - [`bundled`]: the ten types agmsg 1.2.1 ships, built into this binary.
//! - [`registry`]: bundled types, agmsg's own installed types, and trusted external types, as the
//!   types axis's rows of the one enumeration ([`crate::catalog`]): the later candidate of a name wins.
//! - [`plug`]: what a type's code plug (`_delivery.sh`) overrides in agmsg's delivery engine, as data;
//!   [`shim_text`]: the `_delivery.sh` agmsg-host writes, which the scan recognises.
//! - [`detect`]: which runtime is calling (session variables, the process tree, shared credentials,
//!   the fallback), in a documented order.
//! - [`commands`]: `types list | describe | get | detect | boot-argv`, each returning what the
//!   command line prints.
//! - [`offer`]: what the user is shown of an agent type before trusting it, and what `plugin inspect`
//!   says of one.
//! - [`boot`]: the launch argv spawn uses, exactly as agmsg builds it, without running anything.
//! - [`suite`]: the axis's contract suite (a manifest's rules, a delivery plug's rules).
//! - [`delivery`]: a project's delivery file for a type and mode (agmsg's default and its bundled
//!   plugs' behaviours as pure functions) and the one validated target they are applied to.

pub mod boot;
pub mod bundled;
pub mod commands;
pub mod delivery;
pub mod detect;
pub mod manifest;
pub mod module;
pub mod offer;
pub mod plug;
pub mod registry;
pub mod shim_text;
pub mod suite;
pub mod world;

pub use manifest::Manifest;
pub use registry::{AgentType, Origin, Registry};
