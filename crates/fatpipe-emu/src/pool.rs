//! The relay's buffers of packets in the network, by slot: a link's descriptor carries the
//! slot of its packet's bytes (`Packet::seq`). A freed slot is reused, so after the first
//! round trips nothing is allocated.

pub(crate) struct Pool {
    pub bufs: Vec<Box<[u8]>>,
    pub lens: Vec<u32>,
    free: Vec<u32>,
    size: usize,
}

impl Pool {
    /// `initial` slots of `size` bytes each (the largest packet a link carries).
    pub fn new(size: usize, initial: usize) -> Pool {
        let mut pool = Pool { bufs: Vec::new(), lens: Vec::new(), free: Vec::new(), size };
        for _ in 0..initial {
            let slot = pool.grow();
            pool.free.push(slot);
        }
        pool
    }

    fn grow(&mut self) -> u32 {
        self.bufs.push(vec![0u8; self.size].into_boxed_slice());
        self.lens.push(0);
        (self.bufs.len() - 1) as u32
    }

    pub fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| self.grow())
    }

    pub fn put(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// The packet in `slot`.
    pub fn packet(&self, slot: u32) -> &[u8] {
        &self.bufs[slot as usize][..self.lens[slot as usize] as usize]
    }

    pub fn packet_mut(&mut self, slot: u32) -> &mut [u8] {
        &mut self.bufs[slot as usize][..self.lens[slot as usize] as usize]
    }

    /// A slot's whole buffer, to write a packet into (then `set_len`).
    pub fn buffer(&mut self, slot: u32) -> &mut [u8] {
        &mut self.bufs[slot as usize]
    }

    pub fn set_len(&mut self, slot: u32, len: usize) {
        self.lens[slot as usize] = len as u32;
    }

    pub fn slot_bytes(&self) -> usize {
        self.size
    }
}
