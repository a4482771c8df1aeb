// Test-wide self-checks: verify the IR between passes, and round-trip every program the
// tests build (and its form after every pass) through asText() -> parse -> structural equality.
process.env.TSPTO_VERIFY = "1";
process.env.TSPTO_ROUNDTRIP = "1";
// The jit's disk cache: a per-user directory under the OS temp dir, shared by test runs
// (entries are keyed by the compiler's own source fingerprint), never the user's ~/.cache.
import { tmpdir } from "node:os";
import { join } from "node:path";
process.env.TSPTO_CACHE_DIR ??= join(tmpdir(), `tspto-test-cache-${process.getuid?.() ?? "user"}`);
