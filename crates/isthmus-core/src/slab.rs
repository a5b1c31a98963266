//! A slab: values stored under small integer ids that are reused once freed.

#[derive(Clone, Debug)]
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    pub fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.items[id as usize] = Some(value);
                id
            }
            None => {
                self.items.push(Some(value));
                (self.items.len() - 1) as u32
            }
        }
    }

    pub fn take(&mut self, id: u32) -> Option<T> {
        let value = self.items.get_mut(id as usize)?.take()?;
        self.free.push(id);
        Some(value)
    }

    pub fn get(&self, id: u32) -> Option<&T> {
        self.items.get(id as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.items.get_mut(id as usize)?.as_mut()
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_reused_after_take() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.take(a), Some("a"));
        assert_eq!(s.take(a), None);
        assert_eq!(s.insert("c"), a);
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.iter().count(), 2);
    }
}
