//! Seeded random streams: one independent stream per component, so adding a component
//! never shifts another component's random numbers.
//!
//! A stream is xoshiro256++ seeded through SplitMix64 from (run seed, stream label,
//! index). Both algorithms are fixed integer arithmetic, so a seed gives the same numbers
//! on every machine.

/// SplitMix64 step: a bijective 64-bit mixer, used for seeding and for hashing.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Labels of the independent random streams an engine draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// Per-switch ECMP hash salt.
    EcmpSalt = 1,
    /// Per-switch packet spraying choices.
    Spray = 2,
    /// Per-flow traffic source (inter-packet gaps).
    Flow = 3,
    /// Workload generation done in the engine (flow sizes, arrivals, destinations).
    Workload = 4,
    /// Per-port probabilistic AQM decisions (RED, ramps, PIE).
    Aqm = 5,
}

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream `label`/`index` of run `seed`.
    pub fn stream(seed: u64, label: Stream, index: u64) -> Rng {
        let mut x = mix64(seed ^ mix64(label as u64 ^ mix64(index)));
        let mut s = [0u64; 4];
        for word in &mut s {
            x = mix64(x);
            *word = x;
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n), without modulo bias (Lemire's method).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// Exponentially distributed with the given mean.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - U is in (0, 1], so the logarithm is finite.
        -portable_ln(1.0 - self.next_f64()) * mean
    }

    /// Standard normal (Marsaglia's polar method: only ln and sqrt, both portable).
    pub fn normal(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.next_f64() - 1.0;
            let v = 2.0 * self.next_f64() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * portable_ln(s) / s).sqrt();
            }
        }
    }

    /// Log-normal with the given mean and shape `sigma` (the standard deviation of its
    /// logarithm): exp(μ + σZ) with μ = ln(mean) − σ²/2.
    pub fn log_normal(&mut self, mean: f64, sigma: f64) -> f64 {
        let mu = portable_ln(mean) - sigma * sigma / 2.0;
        portable_exp(mu + sigma * self.normal())
    }

    /// A uniformly random permutation of 0..n with no fixed point (n >= 2).
    pub fn derangement(&mut self, n: usize) -> Vec<u32> {
        assert!(n >= 2, "a derangement needs at least 2 elements");
        loop {
            let mut perm: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                perm.swap(i, self.below(i as u64 + 1) as usize);
            }
            if perm.iter().enumerate().all(|(i, &p)| p != i as u32) {
                return perm;
            }
        }
    }
}

/// Natural logarithm from IEEE-754 additions, multiplications and divisions only, which
/// are correctly rounded everywhere, so random draws do not depend on the platform's
/// libm. Accurate to a few units in the last place for positive finite x.
pub fn portable_ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    const LN2: f64 = std::f64::consts::LN_2;
    let (mut m, mut e) = (x, 0i32);
    if m < f64::MIN_POSITIVE {
        m *= (1u64 << 54) as f64;
        e -= 54;
    }
    let bits = m.to_bits();
    e += ((bits >> 52) & 0x7ff) as i32 - 1023;
    m = f64::from_bits((bits & !(0x7ff << 52)) | (1023 << 52));
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    // ln m = 2 atanh(s) with s = (m-1)/(m+1), |s| <= 0.1716: the series converges fast.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    while k < 40.0 {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + e as f64 * LN2
}

/// e^x from IEEE-754 arithmetic only (see `portable_ln`): x = k·ln 2 + r with
/// |r| <= ln 2 / 2, e^r by its Taylor series, scaled by 2^k.
pub fn portable_exp(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -745.0 {
        return 0.0;
    }
    // ln 2 split in two (Cody and Waite) so k·ln 2 is exact enough for large k.
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let k = (x / LN2).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let (mut term, mut sum, mut n) = (1.0, 1.0, 1.0);
    while n < 25.0 {
        term *= r / n;
        sum += term;
        n += 1.0;
    }
    // 2^k in two steps so that neither factor overflows or underflows early.
    let half = (k / 2.0).trunc() as i32;
    sum * 2f64.powi(half) * 2f64.powi(k as i32 - half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..4)
            .map(|_| Rng::stream(7, Stream::Flow, 3).next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::stream(7, Stream::Flow, 3);
        let mut y = Rng::stream(7, Stream::Flow, 4);
        let mut z = Rng::stream(8, Stream::Flow, 3);
        let xs: Vec<u64> = (0..8).map(|_| x.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| y.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| z.next_u64()).collect();
        assert_ne!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn uniform_and_exponential_moments() {
        let mut r = Rng::stream(1, Stream::Workload, 0);
        let n = 200_000;
        let mean_u: f64 = (0..n).map(|_| r.next_f64()).sum::<f64>() / n as f64;
        assert!((mean_u - 0.5).abs() < 0.005, "{mean_u}");
        let mean_e: f64 = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((mean_e - 3.0).abs() < 0.03, "{mean_e}");
        let mut counts = [0u32; 5];
        for _ in 0..n {
            counts[r.below(5) as usize] += 1;
        }
        for c in counts {
            assert!(
                (c as f64 - n as f64 / 5.0).abs() < 0.02 * n as f64 / 5.0,
                "{counts:?}"
            );
        }
    }

    #[test]
    fn portable_ln_agrees_with_libm() {
        let mut r = Rng::stream(3, Stream::Workload, 0);
        let close = |x: f64| {
            let (ours, libm) = (portable_ln(x), x.ln());
            assert!(
                (ours - libm).abs() <= 4.0 * f64::EPSILON * libm.abs().max(1.0),
                "{x}: {ours} vs {libm}"
            );
        };
        for _ in 0..100_000 {
            close(1.0 - r.next_f64());
            close(r.next_f64() * 1e6 + f64::MIN_POSITIVE);
        }
        for x in [1.0, 0.5, 2.0, 1e-300, 1e-310, 1e300, 1.0 - f64::EPSILON] {
            close(x);
        }
    }

    #[test]
    fn derangements_have_no_fixed_point_and_cover_all() {
        let mut r = Rng::stream(5, Stream::Workload, 1);
        for n in [2, 3, 10, 128] {
            let d = r.derangement(n);
            let mut sorted = d.clone();
            sorted.sort();
            assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
            assert!(d.iter().enumerate().all(|(i, &p)| p != i as u32));
        }
    }

    #[test]
    fn portable_exp_matches_libm() {
        for &x in &[-700.0, -20.5, -1.0, -1e-9, 0.0, 0.3, 1.0, 2.5, 50.0, 700.0] {
            let (got, want) = (portable_exp(x), f64::exp(x));
            assert!(
                ((got - want) / want).abs() < 1e-14,
                "exp({x}) = {got}, libm {want}"
            );
        }
    }

    #[test]
    fn normal_and_log_normal_have_their_moments() {
        let mut r = Rng::stream(11, Stream::Workload, 0);
        let n = 200_000;
        let z: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        // Standard errors: 1/sqrt(n) = 0.0022 for the mean, sqrt(2/n) = 0.0032 for var.
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.015,
            "{mean} {var}"
        );
        let x: Vec<f64> = (0..n).map(|_| r.log_normal(5.0, 0.5)).collect();
        let mean = x.iter().sum::<f64>() / n as f64;
        assert!((mean / 5.0 - 1.0).abs() < 0.01, "{mean}");
        let log_sd = {
            let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
            let m = logs.iter().sum::<f64>() / n as f64;
            (logs.iter().map(|l| (l - m) * (l - m)).sum::<f64>() / n as f64).sqrt()
        };
        assert!((log_sd - 0.5).abs() < 0.005, "{log_sd}");
    }
}
