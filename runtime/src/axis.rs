//! The driver axes and what the host knows of each, in one table: its WIT package and version, the
//! `agmsg:host` interfaces its drivers are offered, and what its plugins may ask for. Every per-axis
//! fact is an exhaustive `match` here, so a new axis does not compile until each one is stated.
//!
//! It depends on nothing but serde (for its names in manifests), so any crate can hold the table.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Storage,
    Terminal,
    /// Agent types (`agmsg:agent`): its plugin directory is `types`, as agmsg's, and a candidate there
    /// is an agent type's directory (`type.conf`, its template, optionally a delivery plug component)
    /// or a delivery plug component alone, which answers for the type of its name.
    Types,
}

/// The `agmsg:host` package every axis imports from, and the version this host offers.
pub const HOST_PACKAGE: (&str, &str) = ("agmsg:host", "1.1.0");

/// An `agmsg:host` interface: a capability the host gives drivers through the component model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostInterface {
    /// Log lines, to the host's stderr (every axis).
    Log,
    /// The store's exclusive lock.
    Lock,
    /// Byte-range locks on plain files of the store.
    FileLock,
    /// Named programs, as granted.
    Process,
    /// Sealing remote-sync push envelopes, during a storage driver's `prepare-push` (host 1.1.0).
    Seal,
}

impl HostInterface {
    /// Its name without a version (`agmsg:host/lock`).
    pub fn name(self) -> &'static str {
        match self {
            HostInterface::Log => "agmsg:host/log",
            HostInterface::Lock => "agmsg:host/lock",
            HostInterface::FileLock => "agmsg:host/file-lock",
            HostInterface::Process => "agmsg:host/process",
            HostInterface::Seal => "agmsg:host/seal",
        }
    }
}

/// See [`Axis::contract_interfaces`].
#[derive(Clone, Copy, Debug)]
pub struct ContractInterfaces {
    pub exported: &'static str,
    pub shared_types: &'static str,
}

impl Axis {
    pub const ALL: [Axis; 3] = [Axis::Storage, Axis::Terminal, Axis::Types];

    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Storage => "storage",
            Axis::Terminal => "terminal",
            Axis::Types => "types",
        }
    }

    pub fn parse(s: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// Its position in [`Axis::ALL`] (per-axis tables are arrays indexed by it).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The WIT package its drivers export (`agmsg:storage`).
    pub fn package(self) -> &'static str {
        match self {
            Axis::Storage => "agmsg:storage",
            Axis::Terminal => "agmsg:terminal",
            Axis::Types => "agmsg:agent",
        }
    }

    /// The interfaces of its package the host relies on: the one its drivers export (the version a driver
    /// was built against is read from it) and the one holding the contract's shared types, which its
    /// drivers import (linked as an instance with no functions).
    pub fn contract_interfaces(self) -> ContractInterfaces {
        match self {
            Axis::Storage | Axis::Terminal | Axis::Types => ContractInterfaces { exported: "driver", shared_types: "types" },
        }
    }

    /// The version of its package this host offers (`wit/<axis>/*.wit`).
    pub fn package_version(self) -> &'static str {
        match self {
            Axis::Storage => "1.2.0",
            Axis::Terminal => "1.0.0",
            Axis::Types => "1.0.0",
        }
    }

    /// The `agmsg:host` interfaces its drivers may import (each only as far as the driver is granted).
    pub fn host_interfaces(self) -> &'static [HostInterface] {
        match self {
            Axis::Storage => &[HostInterface::Log, HostInterface::Lock, HostInterface::FileLock, HostInterface::Seal],
            Axis::Terminal => &[HostInterface::Log, HostInterface::Process],
            Axis::Types => &[HostInterface::Log],
        }
    }

    /// Whether its drivers may be given a store directory.
    pub fn has_store(self) -> bool {
        match self {
            Axis::Storage => true,
            Axis::Terminal | Axis::Types => false,
        }
    }

    /// Whether its drivers may be given programs to run.
    pub fn runs_programs(self) -> bool {
        match self {
            Axis::Storage | Axis::Types => false,
            Axis::Terminal => true,
        }
    }

    /// Whether its drivers may be granted network endpoints. A delivery plug computes and the host
    /// touches the world (issue 17 §3: no filesystem, no programs, declared variables only).
    pub fn reaches_network(self) -> bool {
        match self {
            Axis::Storage | Axis::Terminal => true,
            Axis::Types => false,
        }
    }

    /// The table of agmsg keys a plugin manifest of this axis may carry (`[terminal]`), if any.
    pub fn manifest_table(self) -> Option<&'static str> {
        match self {
            Axis::Storage | Axis::Types => None,
            Axis::Terminal => Some("terminal"),
        }
    }

    /// The file that makes one of its plugin directories a package of the axis's own kind instead of a
    /// component with `agmsg-driver.toml` (the types axis: an agent type's `type.conf`), if it has one.
    /// What that file means, the axis's module says (`plugin::DirPackage`).
    pub const fn dir_manifest(self) -> Option<&'static str> {
        match self {
            Axis::Storage | Axis::Terminal => None,
            Axis::Types => Some("type.conf"),
        }
    }
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every contract package this host offers with its version: `agmsg:host` and each axis's.
pub fn offered_packages() -> impl Iterator<Item = (&'static str, &'static str)> {
    std::iter::once(HOST_PACKAGE).chain(Axis::ALL.into_iter().map(|a| (a.package(), a.package_version())))
}
