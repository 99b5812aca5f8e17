//! [`InFlightList`]: requests in flight, oldest dispatch first, linked through the
//! connection slots. The head is the next request to time out and the oldest send
//! still pending, which is the record watermark; appending and unlinking are O(1)
//! and the list never holds more than the requests actually in flight.

use crate::conn::{Conn, NO_SLOT};

#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlightList {
    head: u32,
    tail: u32,
}

impl Default for InFlightList {
    fn default() -> Self {
        InFlightList {
            head: NO_SLOT,
            tail: NO_SLOT,
        }
    }
}

impl InFlightList {
    pub(crate) fn front(&self) -> Option<usize> {
        (self.head != NO_SLOT).then_some(self.head as usize)
    }

    /// Inserts `slot` keeping the list ordered by dispatch time. Requests are
    /// dispatched in time order, so this is an append except for retries and
    /// redirects, which keep their original dispatch time.
    pub(crate) fn insert(&mut self, conns: &mut [Conn], slot: usize, dispatched_ns: u64) {
        let mut after = self.tail;
        while after != NO_SLOT && dispatched_of(conns, after as usize) > dispatched_ns {
            after = conns[after as usize].prev;
        }
        let before = if after == NO_SLOT {
            self.head
        } else {
            conns[after as usize].next
        };
        conns[slot].prev = after;
        conns[slot].next = before;
        match after {
            NO_SLOT => self.head = slot as u32,
            a => conns[a as usize].next = slot as u32,
        }
        match before {
            NO_SLOT => self.tail = slot as u32,
            b => conns[b as usize].prev = slot as u32,
        }
    }

    pub(crate) fn remove(&mut self, conns: &mut [Conn], slot: usize) {
        let (prev, next) = (conns[slot].prev, conns[slot].next);
        match prev {
            NO_SLOT => self.head = next,
            p => conns[p as usize].next = next,
        }
        match next {
            NO_SLOT => self.tail = prev,
            n => conns[n as usize].prev = prev,
        }
        conns[slot].prev = NO_SLOT;
        conns[slot].next = NO_SLOT;
    }
}

fn dispatched_of(conns: &[Conn], slot: usize) -> u64 {
    conns[slot].request.as_ref().map_or(0, |r| r.dispatched_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::InFlight;

    fn conns_with(times: &[u64]) -> Vec<Conn> {
        times
            .iter()
            .map(|&t| {
                let mut conn = Conn::new();
                conn.request = Some(InFlight {
                    attack: 0,
                    seq: t,
                    target: 0,
                    target_index: 0,
                    intended_ns: t,
                    dispatched_ns: t,
                    first_byte_ns: 0,
                    bytes_in: 0,
                    bytes_out: 0,
                    redirects_left: 0,
                    hop: None,
                    lazy: None,
                    retried: false,
                    protocol: record::Protocol::Http1,
                    user: crate::conn::NO_USER,
                    call_tally: crate::conn::CallTally::default(),
                });
                conn
            })
            .collect()
    }

    fn order(list: &InFlightList, conns: &[Conn]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = list.head;
        while at != NO_SLOT {
            out.push(at as usize);
            at = conns[at as usize].next;
        }
        out
    }

    #[test]
    fn keeps_dispatch_order_through_inserts_and_removals() {
        let mut conns = conns_with(&[10, 20, 30, 15, 5]);
        let mut list = InFlightList::default();
        for slot in 0..3 {
            let dispatched_ns = conns[slot].request.as_ref().unwrap().dispatched_ns;
            list.insert(&mut conns, slot, dispatched_ns);
        }
        list.insert(&mut conns, 3, 15);
        list.insert(&mut conns, 4, 5);
        assert_eq!(order(&list, &conns), [4, 0, 3, 1, 2]);
        list.remove(&mut conns, 4);
        list.remove(&mut conns, 1);
        list.remove(&mut conns, 2);
        assert_eq!(order(&list, &conns), [0, 3]);
        assert_eq!(list.front(), Some(0));
        list.remove(&mut conns, 0);
        list.remove(&mut conns, 3);
        assert_eq!(list.front(), None);
    }
}
