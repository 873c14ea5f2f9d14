//! The sandbox worker's loop without its confinement, so that valgrind can run it:
//! `bench/callgrind.sh` feeds it calls on stdin. Never a worker for real agent code.

fn main() {
    wright_sandbox::serve_unconfined_for_profiling();
}
