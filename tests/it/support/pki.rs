//! A fixed self-signed test certificate (EC P-256, `CN=pier-test.example`, SANs `pier-test.example` and
//! `*.pier-test.example`, valid until 2126). It serves as CA bundle, listener certificate and client
//! certificate alike: validation only needs well-formed PEM. Test material only, never a real secret.

pub const CERT_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBwzCCAWqgAwIBAgIURptEdHe1zQvZUwkZZL83xp2emtgwCgYIKoZIzj0EAwIw
HDEaMBgGA1UEAwwRcGllci10ZXN0LmV4YW1wbGUwIBcNMjYxMTIyMDAzNTI0WhgP
MjEyNjEwMjkwMDM1MjRaMBwxGjAYBgNVBAMMEXBpZXItdGVzdC5leGFtcGxlMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAES4BJGy5P7oxSTooJJxKTAjBc4geu2iBI
bfpAr/RZ3g46o7VMFl+EXOyf5vJdFOAr6FzQis5vtYeiFuuUHI6+G6OBhzCBhDAd
BgNVHQ4EFgQUEeNq1Efa+w5cwLspVc2qwfs4pu0wHwYDVR0jBBgwFoAUEeNq1Efa
+w5cwLspVc2qwfs4pu0wDwYDVR0TAQH/BAUwAwEB/zAxBgNVHREEKjAoghFwaWVy
LXRlc3QuZXhhbXBsZYITKi5waWVyLXRlc3QuZXhhbXBsZTAKBggqhkjOPQQDAgNH
ADBEAiAhO/ozlQukZBHPsjsmEjncS5pUeRbABDhhnRkdddbBJAIgBUYNVWLUzFlZ
40Uf5YyYsGM7xIKKz4p5MZJCSMenWZ8=
-----END CERTIFICATE-----
";

pub const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgpfWimojKicdg/ZfK
SmYWRudg4JR7ul2+3CcstFtZWEehRANCAARLgEkbLk/ujFJOigknEpMCMFziB67a
IEht+kCv9FneDjqjtUwWX4Rc7J/m8l0U4CvoXNCKzm+1h6IW65Qcjr4b
-----END PRIVATE KEY-----
";
