//! `agmsg-host types list | describe | get | detect | boot-argv`: the agent types as data. What each
//! prints is the library's ([`agmsg_host::agent::commands`]); here the arguments and the printing.
//!
//! Every value a manifest supplies is printed through the one display rule; `--json` prints JSON.
//! Exit codes: 0 done; 1 the request cannot be met (an unknown type, a type that cannot be spawned, a
//! refused option); 2 usage (clap's, and a key that is not a key). `types get` behaves as agmsg's
//! `agmsg_type_get`: an unknown type or a missing key prints the default and exits 0.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use agmsg_host::agent::boot::BootRequest;
use agmsg_host::agent::commands;
use agmsg_host::error::HostError;

pub const LONG_HELP: &str = "The agent types (claude-code, codex, gemini, ...) as data.\n\n\
    Types come from, in order (a later one of the same name wins): those bundled in this binary \
    (agmsg 1.2.1's ten), agmsg's own installed types ($AGMSG_SKILL_DIR, else ~/.agents/skills/agmsg: \
    scripts/drivers/types/<name>/type.conf), and external types under $AGMSG_HOME/plugins/types/<name>/ \
    and each AGMSG_PLUGIN_DIRS directory's types/<name>/, once trusted. A manifest is read as agmsg \
    reads it, never executed.";

pub const DETECT_HELP: &str = "Which agent runtime is calling, first rule that fires:\n\n\
    1. session variable: a type's detect= variable is set and is the runtime's own (CODEX_THREAD_ID, \
    GROK_SESSION_ID, ...); when several types' are set, the one whose process is the nearest ancestor \
    wins, else the first by type name;\n\
    2. process tree: from the caller up (at most 10 processes, never pid 1), the first ancestor whose \
    name matches a type's detect_proc= glob;\n\
    3. credential: a detect= variable other tools share too (a name ending in _API_KEY, _KEY, _TOKEN, \
    _SECRET, _PASSWORD or _CREDENTIALS, like GEMINI_API_KEY), or a detect_fallback= variable;\n\
    4. fallback: claude-code.\n\n\
    detect=explicit types are never selected from the environment. (agmsg 1.2.1 checks every detect= \
    variable first, by type name, so GEMINI_API_KEY made a grok session detect as gemini.)";

#[derive(Debug, clap::Subcommand)]
pub enum TypesCommand {
    /// Every type: name, where it comes from, whether spawn can launch it, its cli, detection and
    /// delivery modes
    List {
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// A type's every key and where it came from, its template, its plug and what the plug overrides
    Describe {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        #[arg(long)]
        json: bool,
    },
    /// One key's value, as agmsg's `agmsg_type_get <type> <key> [default]`: the default (empty) for a
    /// missing key or an unknown type, exit 0
    Get {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        key: String,
        #[arg(allow_hyphen_values = true)]
        default: Option<String>,
        /// Fail (exit 1) on an unknown type or a missing key instead
        #[arg(long)]
        strict: bool,
    },
    /// Which agent runtime is calling (prints its type)
    #[command(long_about = DETECT_HELP)]
    Detect {
        /// Also say which rule fired and what evidence it outranked
        #[arg(long)]
        explain: bool,
        /// The detection as a JSON object
        #[arg(long)]
        json: bool,
        /// Walk the process tree from PID instead of from the caller
        #[arg(long, value_name = "PID")]
        pid: Option<u32>,
    },
    /// The command spawn would launch for an agent, as JSON (argv, cwd, variables set and unset);
    /// runs nothing
    BootArgv(BootArgs),
}

/// What to boot: the arguments `types boot-argv` and `spawn` share, so both build the same command.
#[derive(Debug, clap::Args)]
pub struct BootArgs {
    /// The agent type (`types list`)
    #[arg(value_name = "TYPE")]
    pub agent_type: String,
    /// The agent's team
    pub team: String,
    /// The agent's name in the team
    pub agent: String,
    /// The project directory the agent works in
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// The model, passed with the type's model_arg (refused for a type without one)
    #[arg(long, value_name = "MODEL", allow_hyphen_values = true)]
    pub model: Option<String>,
    /// Text sent after the actas prompt, on its own line
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub boot_prompt: Option<String>,
    /// Resume this recorded session (when the type has resume_arg; the caller checks it exists)
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,
    /// A spawn-option token, inserted where agmsg inserts spawn_options.yaml's (repeatable)
    #[arg(long = "spawn-arg", value_name = "TOKEN", allow_hyphen_values = true)]
    pub spawn_args: Vec<String>,
}

impl BootArgs {
    /// The type's name and the request, with this installation's skill name and node program.
    pub fn request(self) -> (String, BootRequest) {
        let BootArgs { agent_type, team, agent, project, model, boot_prompt, resume, spawn_args } = self;
        let req = BootRequest { team, agent, project, model, boot_prompt, resume, spawn_options: spawn_args, ..Default::default() };
        (agent_type, req.for_installation())
    }
}

pub fn run(command: TypesCommand) -> ExitCode {
    let text = match command {
        TypesCommand::List { json } => commands::list(json),
        TypesCommand::Describe { agent_type, json } => commands::describe(&agent_type, json),
        TypesCommand::Get { agent_type, key, default, strict } => {
            commands::get(&agent_type, &key, default.as_deref().unwrap_or(""), strict)
        }
        TypesCommand::Detect { explain, json, pid } => commands::detect(explain, json, pid),
        TypesCommand::BootArgv(args) => {
            let (agent_type, req) = args.request();
            commands::boot_argv(&agent_type, &req)
        }
    };
    let printed = text
        .and_then(|text| std::io::stdout().write_all(text.as_bytes()).map_err(|e| HostError::refused(format!("writing the output: {e}"))));
    exit::report("types", printed)
}
