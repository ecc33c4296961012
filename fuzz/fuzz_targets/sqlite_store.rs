#![no_main]

#[global_allocator]
static ALLOC: agmsg_fuzz::Counting = agmsg_fuzz::Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| agmsg_fuzz::run(agmsg_storage_sqlite::fuzz_check::sqlite_store, data));
