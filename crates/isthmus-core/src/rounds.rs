//! Barrier-synchronized incast rounds (partition/aggregate): in every round each sender
//! sends one `size`-byte response to the receiver, and the next round starts `gap` after
//! the last response of the previous one arrived — the workload of the incast studies
//! (Vasudevan et al., SIGCOMM 2009; the DCTCP paper's query traffic).

use crate::transport::dcqcn::DcqcnConfig;
use crate::transport::tcp::TcpConfig;
use crate::units::Time;
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

/// The incast jobs of a simulation: each job's settings, its round, the responses of
/// that round still in flight and every round's record. The engine starts a round's
/// flows (`Engine::add_incast_rounds`); this keeps the books.
#[derive(Clone, Default)]
pub(crate) struct RoundJobs {
    jobs: Vec<(IncastRounds, u32)>,
    /// Responses of each job's current round still in flight.
    outstanding: Vec<u32>,
    job_of_flow: HashMap<u32, u32>,
    records: Vec<RoundRecord>,
}

/// A round due to start: the job's id, its settings and when.
pub(crate) struct DueRound {
    pub id: u32,
    pub job: IncastRounds,
    pub at: Time,
}

impl IncastRounds {
    /// Refuses a job that could never run, naming what is wrong (what its flows could
    /// refuse is the engine's to check).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 {
            return Err("rounds must be at least 1".into());
        }
        if self.senders.is_empty() {
            return Err("an incast needs at least one sender".into());
        }
        if let Some(s) = self.senders.iter().find(|&&s| s == self.receiver) {
            return Err(format!(
                "sender {s} is the receiver; senders must be other hosts"
            ));
        }
        match &self.transport {
            RoundTransport::Tcp(cfg) => cfg.validate()?,
            RoundTransport::Dcqcn(cfg) => cfg.validate()?,
        }
        if self.size == 0 {
            return Err("size must be at least 1 byte".into());
        }
        Ok(())
    }
}

impl RoundJobs {
    /// Takes a checked job whose first round starts at `at`; returns the round to start.
    pub(crate) fn add(&mut self, job: IncastRounds, at: Time) -> DueRound {
        let id = self.jobs.len() as u32;
        self.jobs.push((job.clone(), 0));
        self.outstanding.push(0);
        DueRound { id, job, at }
    }

    /// Records that round `due` started with these response flows.
    pub(crate) fn started(&mut self, due: &DueRound, flows: &[u32]) {
        for &flow in flows {
            self.job_of_flow.insert(flow, due.id);
        }
        let (_, round) = &mut self.jobs[due.id as usize];
        self.records.push(RoundRecord {
            job: due.id,
            round: *round,
            start: due.at,
            finish: None,
        });
        *round += 1;
        self.outstanding[due.id as usize] = flows.len() as u32;
    }

    /// A flow finished at `now`: if it closes its job's round, records the round's end
    /// and returns the next round, when one is left.
    pub(crate) fn finished(&mut self, flow: u32, now: Time) -> Option<DueRound> {
        let id = self.job_of_flow.remove(&flow)?;
        let left = &mut self.outstanding[id as usize];
        *left -= 1;
        if *left > 0 {
            return None;
        }
        if let Some(r) = self.records.iter_mut().rev().find(|r| r.job == id) {
            r.finish = Some(now);
        }
        let (job, started) = &self.jobs[id as usize];
        (*started < job.rounds).then(|| DueRound {
            id,
            job: job.clone(),
            at: now + job.gap,
        })
    }

    /// Every round of every job so far.
    pub(crate) fn records(&self) -> &[RoundRecord] {
        &self.records
    }
}
