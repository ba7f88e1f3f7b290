#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fragfs_fuzz::request_path(data));
