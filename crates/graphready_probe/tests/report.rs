//! The report's JSON: what is written is what is read back.

use graphready_probe::report::Timing;

/// The harness's messages (Python's shortest-repr floats) and the report are JSON read by
/// serde_json: a measured float must come back as written. Its default float parser is one ulp
/// off on about one such value in six (`92.78879165000001` read as `92.78879165`), which made a
/// report differ from itself after a round trip; the workspace enables `float_roundtrip`.
#[test]
fn timings_read_back_bit_exact() {
    for value in [
        92.788_791_650_000_01,
        10.083_619_220_000_001,
        129.590_172_790_000_03,
    ] {
        let timing = Timing {
            iterations: 3,
            eager_median_us: value,
            replay_median_us: Some(value / 3.0),
            speedup: Some(3.0 / value),
        };
        let back: Timing = serde_json::from_str(&serde_json::to_string(&timing).unwrap()).unwrap();
        assert_eq!(back, timing);
    }
}
