//! Hot loops compiled twice, for the baseline x86-64's two float64 lanes
//! and for AVX2's four, the wider taken where the CPU has AVX2 (each site
//! wraps its loop in a `#[target_feature(enable = "avx2")]` twin and asks
//! [`has_avx2`]). FMA stays off in both, and no twin changes the order of
//! its operations, so each element's arithmetic and rounding is the same:
//! the values do not depend on the CPU, only the speed does.

/// Whether the AVX2 twin of a loop may run on this CPU (checked once, then
/// cached by the standard library); always false off x86-64.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}
