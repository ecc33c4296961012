//! The `_delivery.sh` that makes agmsg's bash delivery engine use agmsg-host for a type
//! (`agmsg-host shim types <type>`).
//!
//! agmsg's `scripts/delivery.sh` sources a type's `_delivery.sh` and calls the Template Method's
//! functions it defines. This file defines them as calls to `agmsg-host delivery`, with agmsg's argv:
//!
//! | agmsg calls | with | forwarded to |
//! |---|---|---|
//! | `agmsg_delivery_apply` | `<type> <project> <mode>` | `delivery apply` (the file only; exit 1 refused) |
//! | `agmsg_delivery_status` | `<type> <project>` | `delivery status` (`mode: X` and the detail lines) |
//! | `agmsg_delivery_on_enable` | `<mode> <type> <project>` | `delivery on-enable` |
//! | `agmsg_delivery_on_disable` | `<type> <project>` | `delivery on-disable` |
//! | `agmsg_delivery_stop_directive` | nothing | `delivery stop-directive <this type> <$PROJECT>` |
//!
//! so the type's answer is agmsg-host's: its sandboxed plug component, else agmsg-host's own behaviour
//! for the type, byte for byte what `agmsg-host delivery set` writes. The last three are side effects
//! whose defaults touch processes (agmsg's `on_disable` stops watchers), which agmsg-host never does:
//! when the type does not override one, agmsg-host exits 3 and the file runs agmsg's own default, kept
//! under another name when the file is sourced. `agmsg_delivery_runtime_status` is left to agmsg.
//! `$SKILL_DIR` (delivery.sh's) is passed on as `AGMSG_SKILL_DIR`, so agmsg-host reads agmsg's own
//! types and writes commands naming agmsg's scripts.
//!
//! agmsg-host itself never runs a `_delivery.sh`; it reads one only to learn which functions a shell
//! plug overrides ([`crate::agent::plug::PlugInfo::scan`]). This file overrides nothing of its own, so
//! [`is_shim`] recognises it (exactly the text [`text`] writes for the program and type it names).
//! Both live in [`crate::agent::shim_text`], below the plug scan that uses them; this file adds what
//! a type loses with the shim in place of its plug ([`replaces`]).

use super::Behaviour;
use crate::agent::plug::Function;
use crate::agent::registry::AgentType;
pub use crate::agent::shim_text::{is_shim, text};
use crate::error::HostError;

/// `shim types <type>`: the `_delivery.sh` for one type.
pub struct TypeShim {
    /// The type's name.
    pub name: String,
    /// The file's text, running the agmsg-host this process was started as.
    pub text: String,
    /// What the type loses with the shim in place of its plug ([`replaces`]).
    pub warnings: Vec<String>,
}

impl TypeShim {
    /// Where agmsg finds the file, for the line printed after writing it.
    pub fn hint(&self) -> String {
        format!("agmsg's delivery engine sources it as the _delivery.sh of type {}, in the type's directory", self.name)
    }
}

/// The shim for the type `agent_type` of the environment's registry. Refused: an unknown type, one
/// whose delivery agmsg-host cannot answer ([`replaces`]), this binary not found.
pub fn requested(agent_type: &str) -> Result<TypeShim, HostError> {
    let registry = crate::agent::Registry::from_env();
    let t = registry.require(agent_type)?;
    let warnings = replaces(t)?;
    let bin = crate::shim::invoked_binary()?;
    Ok(TypeShim { name: t.name.clone(), text: text(&t.name, &bin), warnings })
}

/// Whether type `t` can take the shim as its `_delivery.sh`, and what it loses: `Err` when agmsg-host
/// cannot answer its apply and status (a shell plug overrides them and no plug component answers for
/// the type); else one warning per function the type's current plug (agmsg's, or a shell plug on disk)
/// overrides that agmsg-host does not reproduce: with the shim in its place, the type's plug component
/// answers it if it overrides it, else agmsg's default runs.
pub fn replaces(t: &AgentType) -> Result<Vec<String>, HostError> {
    let behaviour = Behaviour::of(t);
    let component = t.plug_component();
    if let (Err(e), None) = (&behaviour, &component) {
        return Err(HostError::new(
            e.class,
            format!("{e}; install a delivery plug component for it first (`agmsg-host plugin install`, axis types)"),
        ));
    }
    let reproduced = |f: Function| match f {
        Function::Apply | Function::Status => true,
        Function::StopDirective => behaviour == Ok(Behaviour::GrokBuild),
        Function::OnDisable => behaviour.as_ref().is_ok_and(|b| b.answers_side_effect(t, false)),
        Function::OnEnable => behaviour.as_ref().is_ok_and(|b| b.answers_side_effect(t, true)),
        Function::RuntimeStatus => false,
    };
    Ok(t.plug()
        .overrides
        .iter()
        .filter(|(f, _)| !reproduced(*f))
        .map(|(f, what)| {
            format!(
                "type {}: its plug's {}{} is not agmsg-host's; with this file in its place {}",
                t.name,
                f.shell_name(),
                what.as_ref().map(|w| format!(" ({w})")).unwrap_or_default(),
                if *f == Function::RuntimeStatus {
                    "agmsg's default runs".to_owned()
                } else {
                    format!(
                        "{} answers it, else agmsg's default runs",
                        if component.is_some() { "its plug component" } else { "a plug component installed for it" }
                    )
                }
            )
        })
        .collect())
}

/// `shim install`'s types shims: `scripts/drivers/types/<type>/_delivery.sh` of every bundled type,
/// written only where agmsg has the type's directory; a type agmsg-host cannot answer for (resolved
/// with `agmsg_dir` as agmsg's directory, what the shim's `agmsg-host delivery` calls will see, told
/// SKILL_DIR) is left out, saying why.
pub fn install_files(agmsg_dir: &std::path::Path, bin: &str) -> Vec<crate::axis_module::ShimFile> {
    use crate::agent::registry::{Registry, TypeLocations};
    let sources = TypeLocations { skill_dir: Some(agmsg_dir.to_owned()), plugin_bases: crate::plugin::registry::bases() };
    let registry = Registry::load(&sources, &crate::plugin::registry::home_trust);
    crate::agent::bundled::TYPES
        .iter()
        .map(|bundled| {
            let answer = registry.require(bundled.name).and_then(|t| Ok((replaces(t)?, text(&t.name, bin))));
            let (text, warnings) = match answer {
                Ok((warnings, text)) => (Ok(text), warnings),
                Err(e) => (Err(e.message), Vec::new()),
            };
            crate::axis_module::ShimFile {
                path: format!("scripts/drivers/types/{}/_delivery.sh", bundled.name),
                text,
                warnings,
                only_in_existing_dir: Some("agmsg has no such type here"),
            }
        })
        .collect()
}
