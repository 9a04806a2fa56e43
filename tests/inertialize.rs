//! Inertialization curves as properties: the quintic's end conditions and Bollo's overshoot
//! control hold for any start, and the spring decays in real time.

use proptest::prelude::*;
use throng::eval::inertialize::{quintic, spring};

proptest! {
    #[test]
    fn overshoot_control_never_crosses_zero(x0 in -2.0f32..2.0, v0 in -50.0f32..50.0, big_t in 0.02f32..1.0) {
        prop_assume!(x0.abs() > 1e-3);
        for i in 0..=100 {
            let (x, _) = quintic(x0, v0, big_t * i as f32 / 100.0, big_t, true);
            prop_assert!(x * x0.signum() >= -1e-4 * x0.abs(), "x({}) = {x} crossed zero from {x0}", big_t * i as f32 / 100.0);
        }
    }

    #[test]
    fn quintic_starts_at_the_offset_and_ends_at_rest(x0 in -2.0f32..2.0, v0 in -5.0f32..5.0, big_t in 0.05f32..1.0) {
        let (x, v) = quintic(x0, v0, 0.0, big_t, false);
        prop_assert!((x - x0).abs() < 1e-5 && (v - v0).abs() < 1e-4);
        let (x, v) = quintic(x0, v0, big_t, big_t, false);
        prop_assert!(x == 0.0 && v == 0.0);
        // Just before T the offset is already tiny: value and velocity reach zero smoothly.
        let (x, _) = quintic(x0, v0, big_t * 0.999, big_t, false);
        prop_assert!(x.abs() < 1e-4 * (1.0 + x0.abs() + v0.abs()));
    }

    #[test]
    fn spring_is_below_two_percent_after_six_halflives(x0 in -2.0f32..2.0, halflife in 0.01f32..1.0) {
        let (x, _) = spring(x0, 0.0, 6.0 * halflife, halflife);
        prop_assert!(x.abs() <= 0.02 * x0.abs() + 1e-7);
    }
}
