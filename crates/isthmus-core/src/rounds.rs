//! Barrier-synchronized incast rounds (partition/aggregate): in every round each sender
//! sends one `size`-byte response to the receiver, and the next round starts `gap` after
//! the last response of the previous one arrived — the workload of the incast studies
//! (Vasudevan et al., SIGCOMM 2009; the DCTCP paper's query traffic).

use crate::transport::dcqcn::DcqcnConfig;
use crate::transport::tcp::TcpConfig;
use crate::units::Time;
use crate::Engine;
use std::collections::HashMap;

/// The transport every response of a round job uses.
#[derive(Clone, Copy, Debug)]
pub enum RoundTransport {
    Tcp(TcpConfig),
    Dcqcn(DcqcnConfig),
}

#[derive(Clone, Debug)]
pub struct IncastRounds {
    pub receiver: u32,
    pub senders: Vec<u32>,
    pub size: u64,
    pub rounds: u32,
    pub gap: Time,
    pub transport: RoundTransport,
}

/// One finished or running round: when its responses were requested and when the last
/// one arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundRecord {
    pub job: u32,
    pub round: u32,
    pub start: Time,
    pub finish: Option<Time>,
}

#[derive(Default)]
pub(crate) struct RoundJobs {
    jobs: Vec<(IncastRounds, u32)>,
    /// Responses of each job's current round still in flight.
    outstanding: Vec<u32>,
    job_of_flow: HashMap<u32, u32>,
    pub(crate) records: Vec<RoundRecord>,
}

impl Engine {
    /// Adds an incast job whose first round starts at `start`; returns its id. The
    /// flows of later rounds count as unfinished from now, so running until flows finish
    /// runs every round.
    pub fn add_incast_rounds(&mut self, job: IncastRounds, start: Time) -> Result<u32, String> {
        if job.rounds == 0 {
            return Err("rounds must be at least 1".into());
        }
        if job.senders.is_empty() {
            return Err("an incast needs at least one sender".into());
        }
        if let Some(s) = job.senders.iter().find(|&&s| s == job.receiver) {
            return Err(format!(
                "sender {s} is the receiver; senders must be other hosts"
            ));
        }
        // Everything a round could refuse is checked first, so a refused job leaves
        // nothing behind.
        for &s in &job.senders {
            self.check_new_flow(s, job.receiver)?;
        }
        match &job.transport {
            RoundTransport::Tcp(cfg) => cfg.validate()?,
            RoundTransport::Dcqcn(cfg) => cfg.validate()?,
        }
        if job.size == 0 {
            return Err("size must be at least 1 byte".into());
        }
        self.check_start(start)?;
        let id = self.rounds.jobs.len() as u32;
        self.rounds.jobs.push((job, 0));
        self.rounds.outstanding.push(0);
        self.start_round(id, start)
            .expect("the job was checked before it was added");
        let (job, _) = &self.rounds.jobs[id as usize];
        self.reserve_unfinished(job.senders.len() * (job.rounds as usize - 1));
        Ok(id)
    }

    fn start_round(&mut self, id: u32, at: Time) -> Result<(), String> {
        let (job, round) = self.rounds.jobs[id as usize].clone();
        for &src in &job.senders {
            let flow = match job.transport {
                RoundTransport::Tcp(cfg) => {
                    self.add_tcp_flow(src, job.receiver, job.size, at, &cfg)
                }
                RoundTransport::Dcqcn(cfg) => {
                    self.add_dcqcn_flow(src, job.receiver, job.size, at, &cfg)
                }
            }?;
            self.rounds.job_of_flow.insert(flow, id);
        }
        self.rounds.outstanding[id as usize] = job.senders.len() as u32;
        self.rounds.jobs[id as usize].1 = round + 1;
        self.rounds.records.push(RoundRecord {
            job: id,
            round,
            start: at,
            finish: None,
        });
        Ok(())
    }

    /// A flow finished: if it closes its job's round, record it and start the next.
    pub(crate) fn on_round_flow_finished(&mut self, flow: u32) {
        let Some(id) = self.rounds.job_of_flow.remove(&flow) else {
            return;
        };
        let left = &mut self.rounds.outstanding[id as usize];
        *left -= 1;
        if *left > 0 {
            return;
        }
        let now = self.now();
        if let Some(r) = self.rounds.records.iter_mut().rev().find(|r| r.job == id) {
            r.finish = Some(now);
        }
        let (job, started) = &self.rounds.jobs[id as usize];
        if *started < job.rounds {
            let (senders, at) = (job.senders.len(), now + job.gap);
            self.release_unfinished(senders);
            self.start_round(id, at)
                .expect("a round that started once starts again");
        }
    }

    /// Every round of every incast job so far.
    pub fn incast_rounds(&self) -> &[RoundRecord] {
        &self.rounds.records
    }
}
