// Fetching a client ID metadata document (draft-ietf-oauth-client-id-metadata-document §4, §6 "Security
// Considerations": server-side request forgery). A client id is a URL anyone may type, so the fetch is bounded on
// every side: https only; at most MAX_DOCUMENT_BYTES; at most timeoutMs from start to the last byte; no redirect
// followed (a 3xx is a failure); and never to an address that is not on the public internet. The host is resolved
// here, every address it resolves to is checked, and the connection goes to a checked address (the lookup given to
// the TLS socket is this check, so a name that resolves differently the second time cannot slip through). Loopback
// is allowed only when the provider itself runs in development or test (the tests' own https server); private,
// link-local, shared, multicast and reserved ranges never are. The certificate is verified against the usual roots
// plus, when the operator names one (CLIENT_METADATA_CA_FILE), a private CA, for these fetches only.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';

export const MAX_DOCUMENT_BYTES = 5 * 1024;
export const DOCUMENT_TIMEOUT_MS = 5000;

/** The fetch failed or its answer is not a document: the reason goes to the log, never to the client. */
export class MetadataFetchError extends Error {
  override name = 'MetadataFetchError';
}

const refused = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  refused.addSubnet(net, prefix, 'ipv6');
}
const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * undefined when the provider may connect to `address` (an IP literal) for a metadata document, else why not.
 * An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
 */
export function addressProblem(address: string, options: { allowLoopback: boolean }): string | undefined {
  let ip = address.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) ip = mapped[1]!;
  const family = isIP(ip) === 6 ? 'ipv6' : isIP(ip) === 4 ? 'ipv4' : undefined;
  if (!family) return `${address} is not an IP address`;
  if (loopback.check(ip, family)) return options.allowLoopback ? undefined : `${ip} is a loopback address`;
  if (refused.check(ip, family)) return `${ip} is a private, link-local or reserved address`;
  // Any other IPv4-mapped or -compatible form (::ffff:7f00:1 and the like): refused rather than decoded.
  if (family === 'ipv6' && /^::(ffff:)?[0-9a-f]{1,4}:[0-9a-f]{1,4}$/i.test(ip)) return `${ip} embeds an IPv4 address`;
  return undefined;
}

export interface FetchOptions {
  allowLoopback: boolean;
  timeoutMs?: number;
  maxBytes?: number;
  /** Extra trusted CAs (PEM), added to Node's root certificates. */
  extraCa?: string | undefined;
}

export interface FetchedDocument {
  body: unknown;
  /** The response's Cache-Control max-age (seconds), undefined when it gives none; 0 for no-store / no-cache. */
  maxAge: number | undefined;
}

/** Cache-Control's freshness in seconds: no-store and no-cache are 0, max-age its value, else undefined. */
export function cacheSeconds(header: string | undefined): number | undefined {
  if (!header) return undefined;
  const directives = header
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0;
  const maxAge = directives.map((d) => /^max-age=(\d{1,10})$/.exec(d)).find(Boolean);
  return maxAge ? Number(maxAge[1]) : undefined;
}

/** GET the document at `url` within the bounds of the file's comment; its JSON body and its Cache-Control. */
export function fetchMetadataDocument(url: string, options: FetchOptions): Promise<FetchedDocument> {
  const timeoutMs = options.timeoutMs ?? DOCUMENT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? MAX_DOCUMENT_BYTES;
  const target = new URL(url);
  if (target.protocol !== 'https:') return Promise.reject(new MetadataFetchError('not an https URL'));
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const problem = addressProblem(host, options);
    if (problem) return Promise.reject(new MetadataFetchError(problem));
  }
  // The TLS socket connects to what this lookup answers: only checked addresses.
  const lookup = (
    hostname: string,
    lookupOptions: object,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const bad = addresses.map((a) => addressProblem(a.address, options)).find((p) => p !== undefined);
      if (bad || addresses.length === 0) {
        const error: NodeJS.ErrnoException = new MetadataFetchError(
          `${hostname} resolves to a refused address: ${bad}`,
        );
        error.code = 'EADDRNOTALLOWED';
        return callback(error, '', 0);
      }
      if ((lookupOptions as { all?: boolean }).all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(new MetadataFetchError(reason));
    };
    const timer = setTimeout(() => fail(`no complete answer within ${timeoutMs} ms`), timeoutMs);
    const req = request(
      target,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        lookup: lookup as never,
        ...(options.extraCa && { ca: [...rootCertificates, options.extraCa] }),
        // One connection per fetch: a pooled socket would skip the address check of a later fetch.
        agent: false,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return fail(`answered ${res.statusCode}${res.headers.location ? ' (a redirect, not followed)' : ''}`);
        }
        const length = Number(res.headers['content-length'] ?? 0);
        if (length > maxBytes) return fail(`Content-Length ${length} is over ${maxBytes} bytes`);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return fail(`the body is over ${maxBytes} bytes`);
          chunks.push(chunk);
        });
        res.on('error', (error) => fail(String(error.message)));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return reject(new MetadataFetchError('the body is not JSON'));
          }
          const cacheControl = res.headers['cache-control'];
          resolve({ body, maxAge: cacheSeconds(Array.isArray(cacheControl) ? cacheControl[0] : cacheControl) });
        });
      },
    );
    req.on('error', (error) => fail(String(error.message)));
    req.end();
  });
}
