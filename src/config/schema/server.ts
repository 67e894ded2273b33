import { z } from 'zod';
import { finite, ms, secret } from './common.js';

/**
 * A name of server.allowedHosts, compared with the Host header's name (its port dropped). One
 * written with its port (`cams.example:8080`), a scheme or a path never matched: every route but
 * the probes answered 403, without a word at start, as an empty list did. Refused, saying how to
 * write it. An IPv6 address is taken with or without its brackets (`[fd00::1]`: the Host names it so).
 */
const allowedHost = z
  .string()
  .min(1)
  .superRefine((h, ctx) => {
    if (/^[a-z][a-z0-9+.-]*:\/\/|[\s/\\]/i.test(h)) ctx.addIssue({ code: 'custom', message: 'a host name alone, without a scheme or a path (cams.example, not https://cams.example/)' });
    else if (/^\[[^\]]*\]:|^[^:[\]]+:[^:]*$/.test(h)) ctx.addIssue({ code: 'custom', message: "a host name without its port (the Host header's port is not compared): cams.example, not cams.example:8080" });
  })
  .transform((h) => (/^\[[^\]]*\]$/.test(h) ? h.slice(1, -1) : h));

/**
 * An http(s) origin: scheme://host[:port], a trailing slash at most. No `*` in the host: a
 * browser's Origin names one host, and `https://*.example.com` (taken for every subdomain) was
 * loaded and admitted nothing.
 */
function isOrigin(o: string): boolean {
  if (!/^https?:\/\/[^/?#@\s*]+\/?$/i.test(o)) return false;
  try {
    return new URL(o).host !== '';
  } catch {
    return false;
  }
}

export const ServerSchema = z
  .object({
    /** Address to bind. Default 127.0.0.1 (loopback only); 0.0.0.0 exposes it. */
    host: z.string().min(1).default('127.0.0.1'),
    /** Port; $ARGUS_HTTP_PORT overrides it; 0 picks a free one. Default 8080. */
    port: finite().int().min(0).max(65535).default(8080),
    /**
     * Every route but /healthz and /readyz (and /metrics with publicMetrics), and /ws, needs this token (`Authorization: Bearer …` or `?token=…`). Default: none.
     * Printable ASCII without spaces: a space or a line break (a token file's last newline) can
     * never be sent as `Bearer <token>` (a scraper was refused for good), and a character beyond
     * Latin-1 cannot be a header at all (the dashboard's fetch threw, and it never polled).
     */
    token: secret().pipe(z.string().min(1).regex(/^[\x21-\x7e]+$/, 'printable ASCII characters without spaces or line breaks (it is sent as "Authorization: Bearer <token>")')).optional(),
    // The limits below are optional in the type (code builds `server` blocks by hand); their
    // defaults are applied by startHttpServer (SERVER_DEFAULTS) and the WebSocket hub.
    /** How long the dashboard's session cookie opens argus unused (its Max-Age, and checked by the server); a request it opens renews it once a tenth of that has passed. Default 43 200 000 ms (12 h). */
    sessionMaxAgeMs: ms(60_000).optional(),
    /** Serve /metrics without the token (for a scraper that cannot send one). Default false. */
    publicMetrics: z.boolean().optional(),
    /** Browser origins (`scheme://host[:port]`, or "*") whose pages may open /ws and call the API routes (/api/sources, /api/snapshot: CORS, preflights, with the token) besides the server's own. Default: none. */
    allowedOrigins: z.array(z.string().refine((o) => o === '*' || isOrigin(o), 'must be "*" or an origin: scheme://host[:port], no path, no wildcard in the host (list each origin)')).optional(),
    /**
     * The origins browsers reach argus by through a reverse proxy that rewrites Host
     * (`https://argus.example.com`): a page of one is argus's own (its session cookie opens the
     * API routes and /ws); on a loopback address their host names are served too (without
     * allowedHosts). Never read from a request's X-Forwarded-Host. Default: none.
     */
    publicOrigins: z.array(z.string().refine(isOrigin, 'must be an origin: scheme://host[:port], no path, no wildcard (not "*": each is an origin argus alone serves)')).optional(),
    /** Open connections, HTTP and WebSocket together; beyond it new ones are closed at once. Default 256. */
    maxConnections: finite().int().min(1).optional(),
    /** Request line and headers together; larger requests answer 431. Default 16384. */
    maxHeaderBytes: finite().int().min(1024).max(1024 * 1024).optional(),
    /** Time to receive a request's headers (also the longest an idle new connection stays open); then 408 and closed. Default 10 000 ms. */
    headersTimeoutMs: ms(100).optional(),
    /** Time to receive a whole request; then 408 and closed. Default 30 000 ms. */
    requestTimeoutMs: ms(100).optional(),
    /** An idle keep-alive connection is closed after this long. Default 5000 ms. */
    keepAliveTimeoutMs: ms(0).optional(),
    /** Requests one address (IPv4; IPv6 by its /64) may send at once before requestsPerAddressPerSecond paces it (a token bucket); beyond it a request answers 429 with Retry-After. /healthz and /readyz have a bucket of their own (at least 30, 10 a second); with a token, so do requests without it (a flood of them does not use up the operator's). Behind a reverse proxy every client has its address: raise both there. Default 120. */
    requestBurstPerAddress: finite().int().min(1).optional(),
    /** The rate one address's requests are paced at, per second (WebSocket upgrades aside: sinks.websocket.handshakesPerAddressPerSecond). Default 20. */
    requestsPerAddressPerSecond: finite().min(0.01).max(1_000_000).optional(),
    /** Host names served (the Host header); others get 403 (the probes, /healthz and /readyz, answer any with their status alone). Default: on loopback only loopback names (stops DNS rebinding); elsewhere any. "*": any. */
    // Not empty: [] served no name, and every route but the probes answered 403 (a dashboard, a
    // Prometheus scrape, the WebSocket) without a word at start.
    allowedHosts: z.array(allowedHost).min(1, 'at least one host name ("*" for any; leave the field out for the default: loopback names on a loopback address, any elsewhere)').optional(),
  })
  .strict();
