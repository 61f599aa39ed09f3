//! The channel source: a virtqueue in miniature.
//!
//! A client and the reactor share two [`sync::spsc`](crate::sync::spsc) rings (requests in,
//! responses out) and an eventfd doorbell. Ringing the doorbell is a system call on the client's
//! side and a wake-up plus an eventfd read on the reactor's, so, as virtio does with
//! `VRING_USED_F_NO_NOTIFY` (or event-idx), the reactor tells the client when it need not ring:
//! while the loop is polling this channel, it lowers the channel's `Doorbell` flag
//! ([`Source::poll_begin`]) and the client only pushes.
//!
//! The race to close is the classic one: the reactor stops polling and sets the flag just as the
//! client pushes a request and reads the flag as still clear; nobody rings, and the request waits
//! forever. Both sides therefore do *store, full fence, load*: the client stores the request
//! (the ring's tail), fences, then loads the flag; the reactor stores the flag, fences, then
//! looks at the ring once more ([`Requests::poll_end`], then the reactor's final `ready()`
//! check). With both fences sequentially consistent, at least one side sees the other's store:
//! either the client rings or the reactor finds the request. This is the crate's one doorbell
//! protocol (`sync::doorbell`), checked by its loom model
//! (`no_lost_wakeup_when_polling_stops` is this very moment).

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use super::{Ctx, EventFd, Source};
use crate::queue::channel::{ChannelOp, Link};
use crate::queue::Completion;
use crate::sync::doorbell::Doorbell;
use crate::sync::spsc::{self, Consumer, Producer};

struct Shared {
    /// Up while the reactor wants the doorbell rung (a channel starts outside the polling set).
    notify: Doorbell,
    doorbell: EventFd,
}

/// A channel of at least `capacity` entries each way.
pub fn channel<Req: Send, Resp: Send>(
    capacity: usize,
) -> std::io::Result<(ChannelClient<Req, Resp>, ChannelServer<Req, Resp>)> {
    let shared = Arc::new(Shared {
        notify: Doorbell::new(true),
        doorbell: EventFd::new()?,
    });
    let (req_p, req_c) = spsc::channel(capacity);
    let (resp_p, resp_c) = spsc::channel(capacity);
    Ok((
        ChannelClient {
            req: req_p,
            resp: resp_c,
            shared: shared.clone(),
            rings: 0,
        },
        ChannelServer {
            requests: Requests {
                ring: req_c,
                shared,
            },
            responses: Responses { ring: resp_p },
        },
    ))
}

/// The client's end: sends requests, takes responses.
pub struct ChannelClient<Req, Resp> {
    req: Producer<Req>,
    resp: Consumer<Resp>,
    shared: Arc<Shared>,
    rings: u64,
}

impl<Req: Send, Resp: Send> ChannelClient<Req, Resp> {
    /// Sends `r`, ringing the doorbell only if the reactor wants it; gives `r` back if the ring
    /// is full.
    pub fn send(&mut self, r: Req) -> Result<(), Req> {
        self.req.push(r)?;
        if self.shared.notify.should_ring() {
            self.rings += 1;
            self.shared.doorbell.ring();
        }
        Ok(())
    }

    /// Takes a response, if one is waiting.
    pub fn recv(&mut self) -> Option<Resp> {
        self.resp.pop()
    }

    /// Times this client rang the doorbell.
    pub fn rings(&self) -> u64 {
        self.rings
    }

    /// Whether the reactor wants doorbells now.
    pub fn notifications_wanted(&self) -> bool {
        self.shared.notify.is_armed()
    }
}

/// A client end carrying [`ChannelOp`]s and [`Completion`]s is a
/// [`ChannelQueue`](crate::queue::channel::ChannelQueue)'s link, so the engine can drive it.
impl Link for ChannelClient<ChannelOp, Completion> {
    fn send(&mut self, op: ChannelOp) -> Result<(), ChannelOp> {
        ChannelClient::send(self, op)
    }
    fn recv(&mut self) -> Option<Completion> {
        ChannelClient::recv(self)
    }
    fn doorbells(&self) -> u64 {
        self.rings()
    }
}

/// The reactor's end, split into its two halves by [`ChannelServer::split`].
pub struct ChannelServer<Req, Resp> {
    requests: Requests<Req>,
    responses: Responses<Resp>,
}

impl<Req: Send, Resp: Send> ChannelServer<Req, Resp> {
    /// The request half (the poll source) and the response half (whoever completes requests).
    pub fn split(self) -> (Requests<Req>, Responses<Resp>) {
        (self.requests, self.responses)
    }
}

/// The request half of a channel's reactor end: what a poll source wraps.
pub struct Requests<Req> {
    ring: Consumer<Req>,
    shared: Arc<Shared>,
}

impl<Req: Send> Requests<Req> {
    /// The doorbell's fd, to monitor.
    pub fn fd(&self) -> RawFd {
        self.shared.doorbell.as_raw_fd()
    }

    /// Whether requests are waiting (the cheap poll check).
    pub fn ready(&self) -> bool {
        !self.ring.is_empty()
    }

    /// Takes the oldest request.
    pub fn pop(&mut self) -> Option<Req> {
        self.ring.pop()
    }

    /// Clears the doorbell (after it rang).
    pub fn drain_doorbell(&self) -> u64 {
        self.shared.doorbell.drain()
    }

    /// Poll mode begins: suppress doorbells.
    pub fn poll_begin(&self) {
        self.shared.notify.disarm();
    }

    /// Poll mode ends: doorbells wanted again (store, full fence); the caller must look at
    /// the ring once more afterwards.
    pub fn poll_end(&self) {
        self.shared.notify.arm();
    }

    /// Whether the client is asked to ring.
    pub fn notifications_wanted(&self) -> bool {
        self.shared.notify.is_armed()
    }
}

/// A channel's request half as a reactor poll source: `ready` looks at the ring, a doorbell or a
/// successful poll calls `serve` (which pops what it wants), and poll mode switches the
/// client's doorbell off and on.
pub struct ChannelSource<Req, F> {
    rq: Requests<Req>,
    serve: F,
}

impl<Req: Send, F: FnMut(&mut Requests<Req>, &mut Ctx<'_>)> ChannelSource<Req, F> {
    /// A source serving `rq` with `serve`.
    pub fn new(rq: Requests<Req>, serve: F) -> Self {
        ChannelSource { rq, serve }
    }
}

impl<Req: Send, F: FnMut(&mut Requests<Req>, &mut Ctx<'_>)> Source for ChannelSource<Req, F> {
    fn fd(&self) -> RawFd {
        self.rq.fd()
    }
    fn on_fd(&mut self, cx: &mut Ctx<'_>, _revents: u32) {
        self.rq.drain_doorbell();
        (self.serve)(&mut self.rq, cx);
    }
    fn is_poll(&self) -> bool {
        true
    }
    fn ready(&mut self) -> bool {
        self.rq.ready()
    }
    fn run(&mut self, cx: &mut Ctx<'_>) {
        (self.serve)(&mut self.rq, cx);
    }
    fn poll_begin(&mut self) {
        self.rq.poll_begin();
    }
    fn poll_end(&mut self) {
        self.rq.poll_end();
    }
}

/// The response half of a channel's reactor end.
pub struct Responses<Resp> {
    ring: Producer<Resp>,
}

impl<Resp: Send> Responses<Resp> {
    /// Posts a response (the client polls for it); gives it back if the ring is full, which a
    /// client that keeps no more requests in flight than the capacity never causes.
    pub fn reply(&mut self, r: Resp) -> Result<(), Resp> {
        self.ring.push(r)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn client_rings_only_when_wanted() {
        let (mut c, s) = channel::<u32, u32>(4).unwrap();
        let (mut rq, mut rs) = s.split();
        c.send(1).unwrap();
        assert_eq!(c.rings(), 1);
        assert_eq!(rq.drain_doorbell(), 1);
        rq.poll_begin();
        c.send(2).unwrap();
        c.send(3).unwrap();
        assert_eq!(c.rings(), 1, "no doorbell while the reactor polls");
        assert_eq!(rq.drain_doorbell(), 0);
        rq.poll_end();
        assert!(rq.ready());
        c.send(4).unwrap();
        assert_eq!(c.rings(), 2);
        let got: Vec<_> = std::iter::from_fn(|| rq.pop()).collect();
        assert_eq!(got, [1, 2, 3, 4]);
        rs.reply(9).unwrap();
        assert_eq!(c.recv(), Some(9));
        assert_eq!(c.recv(), None);
    }
}
