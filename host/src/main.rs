fn main() -> std::process::ExitCode {
    agmsg_host::cli::main()
}
