// Test-wide self-checks: verify the IR between passes, and round-trip every program the
// tests build (and its form after every pass) through asText() -> parse -> structural equality.
process.env.TSPTO_VERIFY = "1";
process.env.TSPTO_ROUNDTRIP = "1";
