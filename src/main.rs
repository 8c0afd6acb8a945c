//! Thin entry point: everything lives in the library so tests can reach it.
fn main() -> std::process::ExitCode {
    rtcheck::app::main()
}
