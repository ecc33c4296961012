//! The types axis's version seam: the bindings of `agmsg:agent/agent-plug` (a type's delivery plug),
//! generated from the list below, sharing the `agmsg:host` interfaces of every axis, and the typed calls
//! the host makes on them, in delivery's own types (`agent::delivery::types`). This file is the only one
//! that names a generated type; the conversions are here, where a value enters or leaves a plug.

use wasmtime::Store;

use crate::agent::delivery::types::{FileAnswer, Mode, PlugApplied, PlugError, PlugTarget};
use crate::runtime::HostState;

crate::runtime::world::driver_world! {
    /// A delivery plug's instance.
    world PlugWorld, pre PlugPre, axis Types;
    bindings "agmsg:agent/agent-plug@1.0.0" in "../wit/agent" as AgentPlug, AgentPlugIndices;
    host {
        "agmsg:host/log" => log,
    }
    optional {}
}

use bindings::agmsg::agent::types as wit;

/// A call's outcome: a trap (`Err`), or the plug's own answer.
pub type Call<T> = wasmtime::Result<Result<T, PlugError>>;

fn answer<T, U>(result: wasmtime::Result<Result<T, wit::PlugError>>, convert: impl FnOnce(T) -> U) -> Call<U> {
    result.map(|answer| {
        answer.map(convert).map_err(|e| match e {
            wit::PlugError::NotOverridden => PlugError::NotOverridden,
            wit::PlugError::Failed(why) => PlugError::Failed(why),
        })
    })
}

fn target(t: &PlugTarget) -> wit::Target {
    wit::Target {
        agent_type: t.agent_type.clone(),
        project: t.project.clone(),
        skill_dir: t.skill_dir.clone(),
        hooks_file: t.hooks_file.clone(),
    }
}

fn to_wit(mode: Mode) -> wit::Mode {
    match mode {
        Mode::Monitor => wit::Mode::Monitor,
        Mode::Turn => wit::Mode::Turn,
        Mode::Both => wit::Mode::Both,
        Mode::Off => wit::Mode::Off,
    }
}

fn from_wit(mode: wit::Mode) -> Mode {
    match mode {
        wit::Mode::Monitor => Mode::Monitor,
        wit::Mode::Turn => Mode::Turn,
        wit::Mode::Both => Mode::Both,
        wit::Mode::Off => Mode::Off,
    }
}

impl PlugWorld {
    fn plug(&self) -> &bindings::exports::agmsg::agent::driver::Guest {
        self.core.agmsg_agent_driver()
    }

    pub fn apply(&self, s: &mut Store<HostState>, t: &PlugTarget, mode: Mode, current: Option<&str>) -> Call<PlugApplied> {
        answer(self.plug().call_apply(s, &target(t), to_wit(mode), current), |applied| PlugApplied {
            file: match applied.file {
                wit::FileAnswer::Write(text) => FileAnswer::Write(text),
                wit::FileAnswer::Remove => FileAnswer::Remove,
                wit::FileAnswer::Keep => FileAnswer::Keep,
            },
            notices: applied.notices,
        })
    }

    pub fn status(&self, s: &mut Store<HostState>, t: &PlugTarget, current: Option<&str>) -> Call<(Mode, Vec<String>)> {
        answer(self.plug().call_status(s, &target(t), current), |(mode, details)| (from_wit(mode), details))
    }

    pub fn on_enable(&self, s: &mut Store<HostState>, t: &PlugTarget, mode: Mode) -> Call<Vec<String>> {
        answer(self.plug().call_on_enable(s, &target(t), to_wit(mode)), |lines| lines)
    }

    pub fn on_disable(&self, s: &mut Store<HostState>, t: &PlugTarget) -> Call<Vec<String>> {
        answer(self.plug().call_on_disable(s, &target(t)), |lines| lines)
    }

    pub fn stop_directive(&self, s: &mut Store<HostState>, t: &PlugTarget) -> Call<String> {
        answer(self.plug().call_stop_directive(s, &target(t)), |text| text)
    }
}
