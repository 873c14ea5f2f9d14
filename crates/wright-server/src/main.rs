//! The `wright` binary: everything is in the library's [`wright_server::cli`].

fn main() -> std::process::ExitCode {
    wright_server::cli::main()
}
