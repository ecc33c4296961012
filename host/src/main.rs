//! The `agmsg-host` binary: the command line over the library. `cli` parses argv, calls the library and
//! prints agmsg's framing; it is not part of the library, so nothing else can depend on it.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
