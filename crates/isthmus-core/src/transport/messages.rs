//! A persistent connection's application: it writes successive messages, each after
//! the previous one has reached the receiver and a think time has passed (a closed
//! loop: a web client fetching pages over one connection, a source running
//! transactions). The connection keeps its congestion state from message to message.

use crate::units::Time;

/// One message: when the application wrote it, its size, and when its last byte
/// reached the receiving application.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageRecord {
    pub start: Time,
    pub size: u64,
    pub finish: Option<Time>,
}

#[derive(Clone)]
pub struct MessageStream {
    sizes: Vec<u64>,
    /// Think time after each message completes, before the next is written.
    thinks: Vec<Time>,
    /// No message is written at or after this time.
    stop: Time,
    pub messages: Vec<MessageRecord>,
    /// Stream offset one past the last byte of the latest message written.
    written_end: u64,
}

impl MessageStream {
    /// Messages of `sizes` bytes, message i followed by `thinks[i]`; refused unless
    /// the lists match and every message has a byte.
    pub fn new(sizes: Vec<u64>, thinks: Vec<Time>, stop: Time) -> Result<MessageStream, String> {
        if sizes.is_empty() {
            return Err("a message stream needs at least one message".into());
        }
        if sizes.len() != thinks.len() {
            return Err(format!(
                "a message stream needs one think time per message: {} sizes, {} think times",
                sizes.len(),
                thinks.len()
            ));
        }
        if let Some(i) = sizes.iter().position(|&s| s == 0) {
            return Err(format!(
                "message {i} has size 0; every message needs a byte"
            ));
        }
        Ok(MessageStream {
            sizes,
            thinks,
            stop,
            messages: Vec::new(),
            written_end: 0,
        })
    }

    /// The next message's size if the application writes one at `now`; None when the
    /// list is exhausted or its stop time has come (the connection then closes).
    pub fn write_next(&mut self, now: Time) -> Option<u64> {
        let i = self.messages.len();
        if i >= self.sizes.len() || (i > 0 && now >= self.stop) {
            return None;
        }
        let size = self.sizes[i];
        self.messages.push(MessageRecord {
            start: now,
            size,
            finish: None,
        });
        self.written_end += size;
        Some(size)
    }

    /// The receiver now holds `delivered` bytes in order. If that completes the latest
    /// message, records its finish and returns when the next one is due.
    pub fn on_delivered(&mut self, delivered: u64, now: Time) -> Option<Time> {
        let i = self.messages.len().checked_sub(1)?;
        let latest = &mut self.messages[i];
        if latest.finish.is_some() || delivered < self.written_end {
            return None;
        }
        latest.finish = Some(now);
        Some(now + self.thinks[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_follows_the_previous_ones_completion_and_think_time() {
        let mut s = MessageStream::new(vec![10, 20, 30], vec![5, 6, 7], 1_000).unwrap();
        assert_eq!(s.write_next(0), Some(10));
        assert_eq!(s.on_delivered(9, 3), None, "not all of it yet");
        assert_eq!(s.on_delivered(10, 4), Some(9));
        assert_eq!(s.on_delivered(10, 5), None, "completes once");
        assert_eq!(s.write_next(9), Some(20));
        assert_eq!(s.on_delivered(30, 12), Some(18));
        assert_eq!(s.write_next(1_000), None, "nothing new at the stop time");
        assert_eq!(
            s.messages,
            vec![
                MessageRecord {
                    start: 0,
                    size: 10,
                    finish: Some(4)
                },
                MessageRecord {
                    start: 9,
                    size: 20,
                    finish: Some(12)
                },
            ]
        );
        assert!(MessageStream::new(vec![1], vec![], 1).is_err());
        assert!(MessageStream::new(vec![0], vec![1], 1).is_err());
    }
}
