//! A receiver's record of byte ranges that arrived beyond the next byte it expects,
//! kept sorted with touching or overlapping ranges merged.

#[derive(Clone, Debug, Default)]
pub struct OutOfOrder {
    ranges: Vec<(u64, u64)>,
}

impl OutOfOrder {
    /// The ranges held, sorted and disjoint.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Records bytes [start, end).
    pub fn insert(&mut self, start: u64, end: u64) {
        let at = self.ranges.partition_point(|&(s, _)| s < start);
        self.ranges.insert(at, (start, end));
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.ranges = merged;
    }

    /// Moves `next` (the next byte expected) over the ranges that now reach it,
    /// forgetting them.
    pub fn advance(&mut self, next: &mut u64) {
        while let Some(&(s, e)) = self.ranges.first() {
            if s > *next {
                break;
            }
            *next = (*next).max(e);
            self.ranges.remove(0);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_fill_the_hole_in_order() {
        let mut ooo = OutOfOrder::default();
        ooo.insert(30, 40);
        ooo.insert(10, 20);
        ooo.insert(20, 25);
        ooo.insert(35, 50);
        let mut next = 5;
        ooo.advance(&mut next);
        assert_eq!(next, 5, "a hole at 5..10 holds everything back");
        next = 10;
        ooo.advance(&mut next);
        assert_eq!(next, 25);
        next = 30;
        ooo.advance(&mut next);
        assert_eq!(next, 50);
        assert!(ooo.is_empty());
    }
}
