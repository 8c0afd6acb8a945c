//! Minimal RFC 6455 framing: frames written by the server (unmasked) and by clients
//! (masked), and one decoder for either end ([`Role`]). Hand-rolled (instead of
//! tungstenite's stream) so an idle server connection holds no read or write buffer at
//! all, and a published message is framed once and shared by every client; the probe
//! reads server frames with the same decoder, timing each read.

pub mod close;

/// Opcodes we use.
pub const OP_CONT: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// Close codes.
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_GOING_AWAY: u16 = 1001;
pub const CLOSE_PROTOCOL: u16 = 1002;
pub const CLOSE_POLICY: u16 = 1008;
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_TOO_BIG: u16 = 1009;
/// The server cannot take the client now (RFC 6455 registry: Try Again Later).
pub const CLOSE_TRY_AGAIN: u16 = 1013;

/// A complete unmasked server frame (FIN set) with `payload`.
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 10);
    push_header(&mut v, opcode, payload.len());
    v.extend_from_slice(payload);
    v
}

fn push_header(v: &mut Vec<u8>, opcode: u8, len: usize) {
    v.push(0x80 | opcode);
    if len < 126 {
        v.push(len as u8);
    } else if len <= u16::MAX as usize {
        v.push(126);
        v.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        v.push(127);
        v.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// Pongs owed to one client answer at most this many pings (the latest ones).
pub const MAX_PONGS: usize = 16;

/// Pongs owed to a client, bounded: past [`MAX_PONGS`] the oldest are dropped, so the most
/// recent ping is always answered (RFC 6455 5.5.3 allows answering only the latest) and a
/// ping flood holds at most 16 x 125 bytes, however TCP split it.
#[derive(Debug, Default)]
pub struct Pongs(std::collections::VecDeque<Vec<u8>>);

impl Pongs {
    pub fn push(&mut self, payload: Vec<u8>) {
        if self.0.len() == MAX_PONGS {
            self.0.pop_front();
        }
        self.0.push_back(payload);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Append the pong frames, oldest first, and forget them.
    pub fn drain_into(&mut self, v: &mut Vec<u8>) {
        for p in self.0.drain(..) {
            v.extend_from_slice(&frame(OP_PONG, &p));
        }
        self.0 = Default::default();
    }
}

/// A close frame with a status code.
pub fn close_frame(code: u16) -> Vec<u8> {
    frame(OP_CLOSE, &code.to_be_bytes())
}

/// A message received from the client (data reassembled, control frames as they come).
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound {
    Text(Vec<u8>),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong,
    Close(Option<u16>),
}

/// Why a client's input is rejected; maps to the close code we send before closing.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("message larger than {0} bytes")]
    TooBig(usize),
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    #[error("text message is not UTF-8")]
    BadUtf8,
}

impl FrameError {
    pub fn close_code(&self) -> u16 {
        match self {
            FrameError::TooBig(_) => CLOSE_TOO_BIG,
            FrameError::Protocol(_) => CLOSE_PROTOCOL,
            FrameError::BadUtf8 => CLOSE_INVALID_DATA,
        }
    }
}

/// Which end decodes: a server reads client frames, which must be masked; a client
/// reads server frames, which must not be (RFC 6455 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    Server,
    Client,
}

/// A decoded message and whether it came compressed: RSV1 on its first frame, allowed
/// only when the decoder was told an extension (permessage-deflate) was negotiated. A
/// compressed payload is handed out as sent (not inflated, not checked as UTF-8).
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    pub inbound: Inbound,
    pub compressed: bool,
}

/// Incremental frame decoder for one end ([`Role`]; `Default` is the server's). Holds
/// only a partial fragmented message, which is empty (no allocation) between messages.
#[derive(Debug, Default)]
pub struct Decoder {
    role: Role,
    /// RSV1 may be set (permessage-deflate negotiated).
    rsv1: bool,
    frag: Vec<u8>,
    frag_op: Option<u8>,
    frag_compressed: bool,
    /// Bytes at the start of a fragmented text message known to be whole UTF-8.
    checked: usize,
    /// A Close was decoded: nothing after it is parsed (RFC 6455 5.5.1).
    closed: bool,
    /// The Close's reason text (UTF-8, at most 123 bytes), when it had one.
    close_reason: Option<String>,
}

/// One frame's header: its length with the mask key, the payload's length, the key.
struct Header {
    len: usize,
    payload: usize,
    mask: Option<[u8; 4]>,
}

impl Decoder {
    /// A client's decoder of server frames; `extension`: permessage-deflate was
    /// negotiated, so RSV1 marks a compressed message.
    pub fn client(extension: bool) -> Decoder {
        Decoder {
            role: Role::Client,
            rsv1: extension,
            ..Decoder::default()
        }
    }

    /// Decode as many complete frames as `buf` holds. Returns the bytes consumed; the
    /// caller keeps the rest for the next read. `max` bounds a frame and a whole message.
    pub fn decode(
        &mut self,
        buf: &[u8],
        max: usize,
        out: &mut Vec<Inbound>,
    ) -> Result<usize, FrameError> {
        self.decode_with(buf, max, &mut |m| out.push(m.inbound))
    }

    /// [`Decoder::decode`], each message marked compressed or not.
    pub fn decode_messages(
        &mut self,
        buf: &[u8],
        max: usize,
        out: &mut Vec<Message>,
    ) -> Result<usize, FrameError> {
        self.decode_with(buf, max, &mut |m| out.push(m))
    }

    fn decode_with(
        &mut self,
        buf: &[u8],
        max: usize,
        emit: &mut impl FnMut(Message),
    ) -> Result<usize, FrameError> {
        if self.closed {
            return Ok(buf.len());
        }
        let mut pos = 0;
        while let Some(h) = self.parse_header(&buf[pos..], max)? {
            let total = h.len + h.payload;
            if buf.len() - pos < total {
                self.check_partial_text(&buf[pos..], &h)?;
                break;
            }
            let b0 = buf[pos];
            let mut payload = buf[pos + h.len..pos + total].to_vec();
            unmask(&mut payload, h.mask);
            pos += total;
            self.frame(b0, payload, max, emit)?;
            if self.closed {
                return Ok(buf.len());
            }
        }
        Ok(pos)
    }

    /// A Close frame was decoded; later bytes are discarded unparsed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The reason text of the Close decoded, if it carried one (peer's words: escape
    /// before showing).
    pub fn close_reason(&self) -> Option<&str> {
        self.close_reason.as_deref()
    }

    /// Bytes of a fragmented message held until its last fragment.
    pub fn held_bytes(&self) -> usize {
        self.frag.len()
    }

    /// Inside a fragmented message (its first fragment came, its last did not).
    pub fn in_message(&self) -> bool {
        self.frag_op.is_some()
    }

    fn frame(
        &mut self,
        b0: u8,
        payload: Vec<u8>,
        max: usize,
        emit: &mut impl FnMut(Message),
    ) -> Result<(), FrameError> {
        let (fin, opcode, rsv1) = (b0 & 0x80 != 0, b0 & 0x0F, b0 & 0x40 != 0);
        // RSV1 (when allowed at all) marks the first frame of a compressed message only.
        if rsv1 && !matches!(opcode, OP_TEXT | OP_BINARY) {
            return Err(FrameError::Protocol(
                "RSV1 on a control or continuation frame",
            ));
        }
        match opcode {
            OP_CLOSE | OP_PING | OP_PONG => {
                if !fin || payload.len() > 125 {
                    return Err(FrameError::Protocol("bad control frame"));
                }
                let inbound = match opcode {
                    OP_PING => Inbound::Ping(payload),
                    OP_PONG => Inbound::Pong,
                    _ => {
                        self.closed = true;
                        let code = close_code(&payload)?;
                        self.close_reason = payload
                            .get(2..)
                            .filter(|r| !r.is_empty())
                            .map(|r| String::from_utf8_lossy(r).into_owned());
                        Inbound::Close(code)
                    }
                };
                emit(Message {
                    inbound,
                    compressed: false,
                });
            }
            OP_TEXT | OP_BINARY => {
                if self.frag_op.is_some() {
                    return Err(FrameError::Protocol("new message inside a fragmented one"));
                }
                if fin {
                    emit(data(opcode, payload, rsv1)?);
                } else {
                    self.frag_op = Some(opcode);
                    self.frag_compressed = rsv1;
                    self.frag = payload;
                    self.checked = 0;
                    self.check_text()?;
                }
            }
            OP_CONT => {
                let Some(op) = self.frag_op else {
                    return Err(FrameError::Protocol("continuation without a message"));
                };
                if self.frag.len() + payload.len() > max {
                    return Err(FrameError::TooBig(max));
                }
                self.frag.extend_from_slice(&payload);
                self.check_text()?;
                if fin {
                    self.frag_op = None;
                    let whole = std::mem::take(&mut self.frag);
                    emit(data(op, whole, self.frag_compressed)?);
                }
            }
            _ => return Err(FrameError::Protocol("unknown opcode")),
        }
        Ok(())
    }
}

fn unmask(payload: &mut [u8], mask: Option<[u8; 4]>) {
    if let Some(m) = mask {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= m[i & 3];
        }
    }
}

/// The status code of a close payload: none, or 2 bytes then a UTF-8 reason (RFC 6455 5.5.1;
/// an invalid reason fails the connection with 1007, 8.1).
fn close_code(payload: &[u8]) -> Result<Option<u16>, FrameError> {
    match payload {
        [] => Ok(None),
        [_] => Err(FrameError::Protocol("bad close payload")),
        [a, b, reason @ ..] => {
            std::str::from_utf8(reason).map_err(|_| FrameError::BadUtf8)?;
            Ok(Some(u16::from_be_bytes([*a, *b])))
        }
    }
}

impl Decoder {
    /// Fail fast inside an unfinished text frame too (Autobahn 6.4.3-6.4.4): the payload
    /// received so far, after what the message already holds, must be UTF-8 up to a
    /// sequence the next bytes may complete.
    fn check_partial_text(&self, frame: &[u8], h: &Header) -> Result<(), FrameError> {
        let opcode = frame[0] & 0x0F;
        let text = match opcode {
            OP_TEXT => self.frag_op.is_none() && frame[0] & 0x40 == 0,
            OP_CONT => self.frag_op == Some(OP_TEXT) && !self.frag_compressed,
            _ => false,
        };
        if !text || frame.len() <= h.len {
            return Ok(());
        }
        let mut v = if opcode == OP_CONT {
            self.frag[self.checked..].to_vec()
        } else {
            Vec::new()
        };
        let at = v.len();
        v.extend_from_slice(&frame[h.len..]);
        unmask(&mut v[at..], h.mask);
        match std::str::from_utf8(&v) {
            Err(e) if e.error_len().is_some() => Err(FrameError::BadUtf8),
            _ => Ok(()),
        }
    }

    /// Fail a fragmented text message at the first invalid UTF-8 byte, not at its end
    /// (RFC 6455 8.1: fail fast); a sequence cut by a fragment boundary waits for the next.
    fn check_text(&mut self) -> Result<(), FrameError> {
        if self.frag_op != Some(OP_TEXT) || self.frag_compressed {
            return Ok(());
        }
        match std::str::from_utf8(&self.frag[self.checked..]) {
            Ok(_) => self.checked = self.frag.len(),
            Err(e) if e.error_len().is_none() => self.checked += e.valid_up_to(),
            Err(_) => return Err(FrameError::BadUtf8),
        }
        Ok(())
    }

    /// The header once enough bytes are there: reserved bits and the mask checked for
    /// this end, the length against `max` before any payload is buffered.
    fn parse_header(&self, b: &[u8], max: usize) -> Result<Option<Header>, FrameError> {
        if b.len() < 2 {
            return Ok(None);
        }
        let reserved = if self.rsv1 { 0x30 } else { 0x70 };
        if b[0] & reserved != 0 {
            return Err(FrameError::Protocol("reserved bits set"));
        }
        let masked = b[1] & 0x80 != 0;
        match (self.role, masked) {
            (Role::Server, false) => return Err(FrameError::Protocol("client frame not masked")),
            (Role::Client, true) => return Err(FrameError::Protocol("server frame masked")),
            _ => {}
        }
        let (ext, len) = match b[1] & 0x7F {
            126 => {
                if b.len() < 4 {
                    return Ok(None);
                }
                (2, u16::from_be_bytes([b[2], b[3]]) as u64)
            }
            127 => {
                if b.len() < 10 {
                    return Ok(None);
                }
                (8, u64::from_be_bytes(b[2..10].try_into().expect("8 bytes")))
            }
            n => (0, n as u64),
        };
        if len > max as u64 {
            return Err(FrameError::TooBig(max));
        }
        let hdr = 2 + ext + if masked { 4 } else { 0 };
        // A key not all here yet is never used: the frame is incomplete, so it waits.
        let mask = (masked && b.len() >= hdr).then(|| {
            let k: [u8; 4] = b[hdr - 4..hdr].try_into().expect("4 bytes");
            k
        });
        Ok(Some(Header {
            len: hdr,
            payload: len as usize,
            mask,
        }))
    }
}

fn data(opcode: u8, payload: Vec<u8>, compressed: bool) -> Result<Message, FrameError> {
    let inbound = if opcode == OP_TEXT {
        if !compressed {
            std::str::from_utf8(&payload).map_err(|_| FrameError::BadUtf8)?;
        }
        Inbound::Text(payload)
    } else {
        Inbound::Binary(payload)
    };
    Ok(Message {
        inbound,
        compressed,
    })
}

/// A masked client frame (for tests and the load generator's pings).
pub fn client_frame(opcode: u8, fin: bool, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 14);
    push_header(&mut v, opcode, payload.len());
    if !fin {
        v[0] &= 0x7F;
    }
    v[1] |= 0x80;
    v.extend_from_slice(&mask);
    v.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i & 3]));
    v
}

/// A client's permessage-deflate inflater (RFC 7692): one raw-deflate stream for the
/// connection, so a server that keeps its context between messages is read too (one that
/// resets it each message is a stream as well). A library's messages (Engine.IO pings,
/// SockJS `h`) must be read to be answered, compressed or not.
pub struct Inflater(flate2::Decompress);

impl Default for Inflater {
    fn default() -> Self {
        Inflater(flate2::Decompress::new(false))
    }
}

impl Inflater {
    /// One compressed message's payload, inflated; `max` bounds the result (a server's
    /// deflate bomb is refused, not held).
    pub fn inflate(&mut self, payload: &[u8], max: usize) -> Result<Vec<u8>, FrameError> {
        let mut input = payload.to_vec();
        // The sync-flush tail the sender strips (RFC 7692 7.2.2).
        input.extend_from_slice(&[0, 0, 0xff, 0xff]);
        let mut out = Vec::with_capacity((payload.len() * 4).clamp(64, max.max(64)));
        let mut used = 0;
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(1024));
            }
            let (before, made) = (self.0.total_in(), out.len());
            let status = self
                .0
                .decompress_vec(&input[used..], &mut out, flate2::FlushDecompress::Sync)
                .map_err(|_| FrameError::Protocol("compressed message is not deflate data"))?;
            used += (self.0.total_in() - before) as usize;
            if out.len() > max {
                return Err(FrameError::TooBig(max));
            }
            let room = out.len() < out.capacity();
            if status == flate2::Status::StreamEnd || (used >= input.len() && room) {
                return Ok(out);
            }
            // zlib hands out at most a window per call: stop only when nothing moved. All input
            // used and nothing more to hand out is a whole message (it may have filled the
            // buffer exactly); input left that zlib will not take is a cut stream.
            if self.0.total_in() == before && out.len() == made {
                if used >= input.len() {
                    return Ok(out);
                }
                return Err(FrameError::Protocol("compressed message ends mid-stream"));
            }
        }
    }
}

/// The close code to answer a client's close with (RFC 6455 7.4): its own code when that may
/// be sent on the wire, 1000 for an empty close, 1002 for a code that must never be sent
/// (1005, 1006, 1015, below 1000, unassigned).
pub fn echo_close_code(code: Option<u16>) -> u16 {
    match code {
        None => CLOSE_NORMAL,
        Some(c @ (1000..=1003 | 1007..=1011 | 3000..=4999)) => c,
        Some(_) => 1002,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const M: [u8; 4] = [1, 2, 3, 4];

    #[test]
    fn server_frame_lengths() {
        assert_eq!(frame(OP_BINARY, &[0; 125])[..2], [0x82, 125]);
        assert_eq!(frame(OP_BINARY, &[0; 1024])[..4], [0x82, 126, 4, 0]);
        let big = frame(OP_BINARY, &vec![0; 70_000]);
        assert_eq!(big[1], 127);
        assert_eq!(u64::from_be_bytes(big[2..10].try_into().unwrap()), 70_000);
        assert_eq!(big.len(), 70_010);
    }

    #[test]
    fn decodes_split_masked_frames() {
        let mut wire = client_frame(OP_TEXT, true, b"hello", M);
        wire.extend(client_frame(OP_PING, true, b"p", M));
        wire.extend(client_frame(OP_BINARY, false, &[1; 200], M));
        wire.extend(client_frame(OP_CONT, true, &[2; 10], M));
        wire.extend(client_frame(OP_CLOSE, true, &1000u16.to_be_bytes(), M));
        for split in 0..wire.len() {
            let mut d = Decoder::default();
            let mut out = Vec::new();
            let n = d.decode(&wire[..split], 1024, &mut out).unwrap();
            let mut rest = wire[n..split].to_vec();
            rest.extend_from_slice(&wire[split..]);
            let m = d.decode(&rest, 1024, &mut out).unwrap();
            assert_eq!(m, rest.len());
            let mut bin = vec![1u8; 200];
            bin.extend([2u8; 10]);
            assert_eq!(
                out,
                vec![
                    Inbound::Text(b"hello".to_vec()),
                    Inbound::Ping(b"p".to_vec()),
                    Inbound::Binary(bin),
                    Inbound::Close(Some(1000)),
                ]
            );
        }
    }

    #[test]
    fn rejects_bad_input_with_close_codes() {
        let mut out = Vec::new();
        let big = client_frame(OP_BINARY, true, &[0; 2000], M);
        let e = Decoder::default().decode(&big, 1024, &mut out).unwrap_err();
        assert_eq!(e.close_code(), CLOSE_TOO_BIG);
        // Header alone is enough to reject an oversized frame (no buffering of it).
        let e = Decoder::default()
            .decode(&big[..8], 1024, &mut out)
            .unwrap_err();
        assert_eq!(e, FrameError::TooBig(1024));
        // Fragments adding up over the limit.
        let mut w = client_frame(OP_BINARY, false, &[0; 600], M);
        w.extend(client_frame(OP_CONT, true, &[0; 600], M));
        let e = Decoder::default().decode(&w, 1024, &mut out).unwrap_err();
        assert_eq!(e.close_code(), CLOSE_TOO_BIG);
        let unmasked = frame(OP_TEXT, b"hi");
        let e = Decoder::default()
            .decode(&unmasked, 1024, &mut out)
            .unwrap_err();
        assert_eq!(e.close_code(), CLOSE_PROTOCOL);
        let e = Decoder::default()
            .decode(b"GET / HTTP/1.1\r\n", 1024, &mut out)
            .unwrap_err();
        assert_eq!(e.close_code(), CLOSE_PROTOCOL);
        let bad = client_frame(OP_TEXT, true, &[0xff, 0xfe], M);
        let e = Decoder::default().decode(&bad, 1024, &mut out).unwrap_err();
        assert_eq!(e.close_code(), CLOSE_INVALID_DATA);
        let cont = client_frame(OP_CONT, true, b"x", M);
        assert!(Decoder::default().decode(&cont, 1024, &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn fragmented_text_fails_at_the_first_bad_fragment() {
        let mut out = Vec::new();
        let mut d = Decoder::default();
        // "κ" split across fragments is fine...
        let mut w = client_frame(OP_TEXT, false, &[b'a', 0xce], M);
        w.extend(client_frame(OP_CONT, false, &[0xba], M));
        assert_eq!(d.decode(&w, 1024, &mut out), Ok(w.len()));
        // ...an invalid byte fails before the message ends.
        let bad = client_frame(OP_CONT, false, &[0xff], M);
        assert_eq!(d.decode(&bad, 1024, &mut out), Err(FrameError::BadUtf8));
        assert!(out.is_empty());
    }

    #[test]
    fn an_unfinished_text_frame_fails_at_its_first_invalid_byte() {
        let mut out = Vec::new();
        let f = client_frame(OP_TEXT, true, &[b'a', 0xce, 0xba, 0xff, b'b', b'c'], M);
        // Header + "a" + half of "κ": fine so far, nothing decoded.
        assert_eq!(Decoder::default().decode(&f[..8], 1024, &mut out), Ok(0));
        // The 0xff arrives: fail now, before the frame is complete.
        let e = Decoder::default().decode(&f[..10], 1024, &mut out);
        assert_eq!(e, Err(FrameError::BadUtf8));
        // Binary frames are not checked.
        let b = client_frame(OP_BINARY, true, &[0xff, 0xff, 0], M);
        assert_eq!(Decoder::default().decode(&b[..8], 1024, &mut out), Ok(0));
        assert!(out.is_empty());
    }

    /// What a server's permessage-deflate sends: raw deflate, sync-flushed, the tail cut.
    fn deflated(z: &mut flate2::Compress, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 64);
        z.compress_vec(text, &mut out, flate2::FlushCompress::Sync)
            .unwrap();
        assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
        out.truncate(out.len() - 4);
        out
    }

    #[test]
    fn compressed_messages_inflate_across_a_kept_context_and_within_a_bound() {
        let mut z = flate2::Compress::new(flate2::Compression::default(), false);
        let mut inf = Inflater::default();
        let ping = br#"2probe"#;
        // The second copy refers back to the first message's window: the context is kept.
        for _ in 0..3 {
            let m = deflated(&mut z, ping);
            assert_eq!(inf.inflate(&m, 1024).unwrap(), ping.to_vec());
        }
        let big = vec![b'a'; 100_000];
        let m = deflated(&mut z, &big);
        assert!(m.len() < 1000, "{}", m.len());
        assert_eq!(inf.inflate(&m, 1 << 20).unwrap(), big);
        let m = deflated(&mut z, &big);
        assert_eq!(inf.inflate(&m, 4096), Err(FrameError::TooBig(4096)));
        let e = Inflater::default().inflate(&[0xff, 0xff, 0xff], 1024);
        assert!(matches!(e, Err(FrameError::Protocol(_))), "{e:?}");
    }

    #[test]
    fn messages_that_fill_the_buffer_exactly_inflate() {
        // 64 B is the first buffer; every doubling after it is a boundary too.
        let mut sizes = vec![1, 63, 64, 65, 127, 128, 129];
        for shift in 8..=17 {
            let n = 1usize << shift;
            sizes.extend([n - 1, n, n + 1]);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    b'a' + (seed % 26) as u8
                })
                .collect()
        };
        for &n in &sizes {
            for body in [vec![b'x'; n], noise(n)] {
                // A fresh context per message and a kept one across messages.
                let mut z = flate2::Compress::new(flate2::Compression::default(), false);
                let m = deflated(&mut z, &body);
                assert_eq!(
                    Inflater::default().inflate(&m, 1 << 20).unwrap(),
                    body,
                    "{n} B"
                );
                let mut inf = Inflater::default();
                let mut z = flate2::Compress::new(flate2::Compression::default(), false);
                for _ in 0..3 {
                    let m = deflated(&mut z, &body);
                    assert_eq!(inf.inflate(&m, 1 << 20).unwrap(), body, "{n} B kept");
                }
            }
        }
    }

    #[test]
    fn pongs_keep_the_latest_sixteen() {
        let mut p = Pongs::default();
        for i in 0..40u8 {
            p.push(vec![i]);
        }
        let mut v = Vec::new();
        p.drain_into(&mut v);
        let want: Vec<u8> = (24..40u8).flat_map(|i| frame(OP_PONG, &[i])).collect();
        assert_eq!(v, want);
        assert!(p.is_empty());
    }

    #[test]
    fn close_reason_must_be_utf8() {
        let mut out = Vec::new();
        let mut p = 1000u16.to_be_bytes().to_vec();
        p.extend_from_slice(&[0xce, 0xba, 0xe1, 0xbd]); // truncated UTF-8
        let bad = client_frame(OP_CLOSE, true, &p, M);
        let e = Decoder::default().decode(&bad, 1024, &mut out).unwrap_err();
        assert_eq!(e.close_code(), CLOSE_INVALID_DATA);
        let mut p = 1000u16.to_be_bytes().to_vec();
        p.extend_from_slice("bye κόσμε".as_bytes());
        let good = client_frame(OP_CLOSE, true, &p, M);
        let mut d = Decoder::default();
        d.decode(&good, 1024, &mut out).unwrap();
        assert_eq!(out, vec![Inbound::Close(Some(1000))]);
        // The reason is kept for the report; a bare code has none.
        assert_eq!(d.close_reason(), Some("bye κόσμε"));
        let mut d = Decoder::default();
        d.decode(&close_frame_masked(1008), 1024, &mut out).unwrap();
        assert_eq!(d.close_reason(), None);
    }

    fn close_frame_masked(code: u16) -> Vec<u8> {
        client_frame(OP_CLOSE, true, &code.to_be_bytes(), M)
    }

    #[test]
    fn nothing_after_a_close_is_parsed() {
        let mut wire = client_frame(OP_CLOSE, true, &1000u16.to_be_bytes(), M);
        wire.extend(client_frame(OP_TEXT, true, &[0xff, 0xfe], M));
        wire.extend_from_slice(b"garbage");
        let (mut d, mut out) = (Decoder::default(), Vec::new());
        assert_eq!(d.decode(&wire, 1024, &mut out), Ok(wire.len()));
        assert_eq!(out, vec![Inbound::Close(Some(1000))]);
        assert!(d.is_closed());
        assert_eq!(d.decode(b"\xff\xff", 1024, &mut out), Ok(2));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_client_reads_unmasked_server_frames() {
        let mut wire = frame(OP_PING, b"p");
        let mut first = frame(OP_TEXT, b"hel");
        first[0] &= 0x7F; // not FIN
        wire.extend(first);
        wire.extend(frame(OP_PONG, b""));
        wire.extend(frame(OP_CONT, b"lo"));
        wire.extend(frame(OP_BINARY, &[0; 300]));
        wire.extend(close_frame(1001));
        wire.extend(b"after");
        for split in 0..wire.len() {
            let (mut d, mut out) = (Decoder::client(false), Vec::new());
            let n = d.decode(&wire[..split], 1024, &mut out).unwrap();
            let mut rest = wire[n..split].to_vec();
            rest.extend_from_slice(&wire[split..]);
            assert_eq!(d.decode(&rest, 1024, &mut out), Ok(rest.len()));
            assert_eq!(
                out,
                vec![
                    Inbound::Ping(b"p".to_vec()),
                    Inbound::Pong,
                    Inbound::Text(b"hello".to_vec()),
                    Inbound::Binary(vec![0; 300]),
                    Inbound::Close(Some(1001)),
                ],
                "split {split}"
            );
        }
        // A masked frame from a server is a protocol error (RFC 6455 5.1).
        let masked = client_frame(OP_TEXT, true, b"hi", M);
        let e = Decoder::client(false).decode(&masked, 1024, &mut Vec::new());
        assert_eq!(e, Err(FrameError::Protocol("server frame masked")));
        let e = Decoder::client(false).decode(&frame(OP_BINARY, &[0; 2000]), 1024, &mut Vec::new());
        assert_eq!(e, Err(FrameError::TooBig(1024)));
    }

    #[test]
    fn rsv1_marks_a_compressed_message_only_when_negotiated() {
        let mut f = frame(OP_TEXT, &[0xff, 0x00, 0xfe]); // deflated bytes, not UTF-8
        f[0] |= 0x40;
        let e = Decoder::client(false).decode(&f, 1024, &mut Vec::new());
        assert_eq!(e, Err(FrameError::Protocol("reserved bits set")));
        let mut out = Vec::new();
        Decoder::client(true)
            .decode_messages(&f, 1024, &mut out)
            .unwrap();
        assert_eq!(
            out,
            vec![Message {
                inbound: Inbound::Text(vec![0xff, 0x00, 0xfe]),
                compressed: true
            }]
        );
        // Fragmented: RSV1 on the first frame only, the whole message compressed.
        let mut w = frame(OP_TEXT, &[0xff]);
        w[0] = 0x40 | OP_TEXT;
        w.extend(frame(OP_CONT, &[0xfe]));
        let mut out = Vec::new();
        Decoder::client(true)
            .decode_messages(&w, 1024, &mut out)
            .unwrap();
        assert!(out[0].compressed);
        let mut ping = frame(OP_PING, b"");
        ping[0] |= 0x40;
        assert!(Decoder::client(true)
            .decode(&ping, 1024, &mut Vec::new())
            .is_err());
        // RSV2 and RSV3 stay reserved.
        let mut r2 = frame(OP_TEXT, b"a");
        r2[0] |= 0x20;
        assert!(Decoder::client(true)
            .decode(&r2, 1024, &mut Vec::new())
            .is_err());
        let plain = frame(OP_TEXT, b"a");
        let mut out = Vec::new();
        Decoder::client(true)
            .decode_messages(&plain, 1024, &mut out)
            .unwrap();
        assert!(!out[0].compressed);
    }

    /// `data` cut at `cuts` (positions taken modulo its length, any order).
    fn splits(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut pts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        pts.sort_unstable();
        let (mut out, mut prev) = (Vec::new(), 0);
        for p in pts.into_iter().chain([data.len()]) {
            out.push(data[prev..p].to_vec());
            prev = p;
        }
        out
    }

    fn decode_parts(
        mut d: Decoder,
        parts: Vec<Vec<u8>>,
        max: usize,
    ) -> Result<Vec<Message>, FrameError> {
        let (mut buf, mut out) = (Vec::new(), Vec::new());
        for p in parts {
            buf.extend_from_slice(&p);
            let n = d.decode_messages(&buf, max, &mut out)?;
            buf.drain(..n);
        }
        Ok(out)
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever a server sends, split anywhere: messages or an error, the same as
        /// when it comes in one piece, never a panic.
        #[test]
        fn client_side_any_bytes_any_split(data in proptest::collection::vec(any::<u8>(), 0..4096),
                                           cuts in proptest::collection::vec(any::<usize>(), 0..8),
                                           ext in any::<bool>()) {
            let whole = decode_parts(Decoder::client(ext), vec![data.clone()], 1024);
            let split = decode_parts(Decoder::client(ext), splits(&data, &cuts), 1024);
            match (&whole, &split) {
                (Ok(w), Ok(s)) => prop_assert_eq!(w, s),
                // Which rule fails first may differ (a partial text frame is checked early).
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "whole {whole:?} vs split {split:?}"),
            }
        }
    }

    proptest! {
        // Large frames (16- and 64-bit lengths) cost more per case.
        #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn server_frames_round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..70_000), 1..3),
                                    cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let mut raw = Vec::new();
            for p in &payloads {
                raw.extend_from_slice(&frame(OP_BINARY, p));
            }
            let got = decode_parts(Decoder::client(false), splits(&raw, &cuts), 1 << 20).unwrap();
            let got: Vec<Vec<u8>> = got.into_iter().map(|m| match m.inbound {
                Inbound::Binary(b) => b,
                other => panic!("{other:?}"),
            }).collect();
            prop_assert_eq!(got, payloads);
        }
    }
}
