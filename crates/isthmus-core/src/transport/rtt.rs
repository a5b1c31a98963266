//! RFC 6298's round-trip estimator and retransmission timeout: SRTT and RTTVAR with
//! gains 1/8 and 1/4, RTO = SRTT + 4·RTTVAR clamped to [min_rto, max_rto], doubled on
//! every timeout.

use super::tcp::TcpConfig;
use crate::units::Time;

#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    srtt: Option<Time>,
    rttvar: Time,
    rto: Time,
    min_rto: Time,
    max_rto: Time,
}

impl RttEstimator {
    /// Before any sample the timeout is the configuration's `initial_rto`.
    pub fn new(cfg: &TcpConfig) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            rto: cfg.initial_rto,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
        }
    }

    pub fn sample(&mut self, rtt: Time) {
        let srtt = match self.srtt {
            None => {
                self.rttvar = rtt / 2;
                rtt
            }
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(rtt)) / 4;
                (7 * srtt + rtt) / 8
            }
        };
        self.srtt = Some(srtt);
        self.rto = (srtt + 4 * self.rttvar).clamp(self.min_rto, self.max_rto);
    }

    /// Doubles the timeout after it expired (up to max_rto).
    pub fn back_off(&mut self) {
        self.rto = (self.rto * 2).min(self.max_rto);
    }

    /// Keeps a backed-off timeout no lower than min_rto when no sample may be taken
    /// (Karn: the handshake was retransmitted).
    pub fn floor(&mut self) {
        self.rto = self.rto.max(self.min_rto);
    }

    pub fn rto(&self) -> Time {
        self.rto
    }

    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    #[test]
    fn follows_rfc_6298() {
        let cfg = TcpConfig {
            min_rto: 200 * US,
            ..Default::default()
        };
        let mut r = RttEstimator::new(&cfg);
        assert_eq!(r.rto(), cfg.initial_rto);
        r.sample(100 * US);
        // SRTT = R, RTTVAR = R/2, RTO = R + 4·R/2 = 3R.
        assert_eq!((r.srtt(), r.rto()), (Some(100 * US), 300 * US));
        r.sample(200 * US);
        // RTTVAR = 3/4·50 + 1/4·100 = 62.5 µs; SRTT = 7/8·100 + 1/8·200 = 112.5 µs.
        assert_eq!(r.srtt(), Some(112_500_000));
        assert_eq!(r.rto(), 112_500_000 + 4 * 62_500_000);
        r.sample(US);
        r.sample(US);
        assert!(r.rto() >= cfg.min_rto);
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.rto(), cfg.max_rto);
    }
}
