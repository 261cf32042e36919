//! Just enough HTTP/1.1 for the loopback stubs (Runtime API, payment API, fault proxy):
//! read one message with its body (Content-Length, chunked, or until EOF), write one
//! response. Written on tokio's streams so no extra hyper features are compiled.

use std::io;

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};

/// Upper bound on a message body: these stubs only see small JSON documents.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// The start line and headers of a request or response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// `POST /path HTTP/1.1` or `HTTP/1.1 200 OK`.
    pub start_line: String,
    /// In order, names as sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request method, or the response's protocol.
    pub fn method(&self) -> &str {
        self.start_line.split(' ').next().unwrap_or_default()
    }

    /// The request target, or the response's status code.
    pub fn path(&self) -> &str {
        self.start_line.split(' ').nth(1).unwrap_or_default()
    }

    /// The response status (0 if unparsable).
    pub fn status(&self) -> u16 {
        self.path().parse().unwrap_or(0)
    }

    /// Removes every header `name`.
    pub fn remove(&mut self, name: &str) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    /// The head as sent on the wire, ending with the blank line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.start_line);
        for (name, value) in &self.headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        out.into_bytes()
    }
}

/// Whether a message without Content-Length or chunked encoding has a body that runs to
/// the end of the connection (a response) or no body (a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unframed {
    /// Requests: no framing means no body.
    NoBody,
    /// Responses: no framing means "until the server closes".
    UntilEof,
}

/// Reads one message. `Ok(None)`: the peer closed the connection before a new message.
pub async fn read_message<R>(
    reader: &mut R,
    unframed: Unframed,
) -> io::Result<Option<(Head, Vec<u8>)>>
where
    R: AsyncBufRead + Unpin,
{
    let mut start_line = String::new();
    loop {
        start_line.clear();
        if reader.read_line(&mut start_line).await? == 0 {
            return Ok(None);
        }
        // Tolerate stray blank lines between keep-alive messages.
        if !start_line.trim().is_empty() {
            break;
        }
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the headers",
            ));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let head = Head {
        start_line: start_line.trim_end().to_owned(),
        headers,
    };
    let body = read_body(reader, &head, unframed).await?;
    Ok(Some((head, body)))
}

async fn read_body<R>(reader: &mut R, head: &Head, unframed: Unframed) -> io::Result<Vec<u8>>
where
    R: AsyncBufRead + Unpin,
{
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    if chunked {
        return read_chunked(reader).await;
    }
    if let Some(length) = head.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad content-length"))?;
        if length > MAX_BODY {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        return Ok(body);
    }
    let status = head.status();
    let bodiless_status =
        head.method().starts_with("HTTP/") && (status == 204 || status == 304 || status < 200);
    match unframed {
        Unframed::UntilEof if !bodiless_status => {
            let mut body = Vec::new();
            reader.take(MAX_BODY as u64).read_to_end(&mut body).await?;
            Ok(body)
        }
        _ => Ok(Vec::new()),
    }
}

async fn read_chunked<R>(reader: &mut R) -> io::Result<Vec<u8>>
where
    R: AsyncBufRead + Unpin,
{
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line).await?;
        let size_hex = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers, then the blank line.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).await?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf).await?;
    }
}

/// Writes a complete response with a Content-Length.
pub async fn write_response<W>(
    writer: &mut W,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut head = Head {
        start_line: format!("HTTP/1.1 {status} {}", reason(status)),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    };
    head.headers
        .push(("Content-Length".into(), body.len().to_string()));
    writer.write_all(&head.to_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// Writes `head` (re-framed with a Content-Length) and `body`.
pub async fn write_message<W>(writer: &mut W, mut head: Head, body: &[u8]) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    head.remove("content-length");
    head.remove("transfer-encoding");
    head.headers
        .push(("Content-Length".into(), body.len().to_string()));
    writer.write_all(&head.to_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// Reads a whole response from a stream the server closes (or frames) after it.
pub async fn read_response<S>(stream: S) -> io::Result<(Head, Vec<u8>)>
where
    S: AsyncRead + Unpin,
{
    let mut reader = tokio::io::BufReader::new(stream);
    read_message(&mut reader, Unframed::UntilEof)
        .await?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no response"))
}

/// One request on a fresh connection to `address` (`127.0.0.1:PORT`): the status and body.
pub async fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<(u16, Vec<u8>)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let mut head = Head {
        start_line: format!("{method} {path} HTTP/1.1"),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    };
    head.headers.push(("Host".into(), address.to_owned()));
    head.headers.push(("Connection".into(), "close".into()));
    write_message(&mut stream, head, body).await?;
    let (head, body) = read_response(stream).await?;
    Ok((head.status(), body))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        400 => "Bad Request",
        402 => "Payment Required",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
