#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fragfs_fuzz::propfind_body(data));
