import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { redact } from '../../src/core/redact.js';

/**
 * Kafka's TLS options are checked as Node's TLS takes them, when the pipeline loads: `ca:
 * /etc/kafka/ca.pem` (a path where Node takes PEM text) ran with "Failed to connect:
 * error:0480006C:PEM routines::no start line" every few seconds, alerts piling up in the
 * outbox, no field named.
 */
const source = 'sources:\n  - {id: a, uri: /x.mp4}\n';
const refusal = (yaml: string) => {
  try {
    parseConfigText(yaml, PipelineSchema, 'p.yaml', {});
  } catch (e) {
    expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
    return (e as Error).message;
  }
  throw new Error(`accepted: ${yaml}`);
};
const kafka = (ssl: string) => `${source}sinks:\n  kafka: {brokers: ["k:9093"], ssl: ${ssl}}\n`;

describe('sinks.kafka.ssl and cluster.ssl', () => {
  it('a file path where PEM text belongs names the option, and what to give instead', () => {
    const msg = refusal(kafka('{ca: /etc/kafka/ca.pem, cert: /etc/kafka/client.pem, key: /etc/kafka/client.key}'));
    expect(msg).toContain("sinks.kafka.ssl.ca: PEM text (-----BEGIN …), not a file's path: Node's TLS takes the certificates themselves; give the file's text (a YAML block, `ca: |`, or ${env:VAR} holding it)");
    expect(msg).toContain('sinks.kafka.ssl.cert: PEM text');
    expect(msg).toContain("sinks.kafka.ssl.key: PEM text (-----BEGIN …), not a file's path: Node's TLS takes the key itself");
    expect(refusal(`sinks:\n  kafka: {brokers: ["k:9093"]}\ncluster:\n  ssl: {ca: [/a.pem]}\n`)).toContain('cluster.ssl.ca[0]: PEM text');
  });

  it("what Node's TLS refuses is said with OpenSSL's reason, without the value", () => {
    const secretish = 'AAAAsecretAAAA';
    const msg = refusal(kafka(`{cert: "-----BEGIN CERTIFICATE-----\\n${secretish}\\n-----END CERTIFICATE-----\\n"}`));
    expect(msg).toMatch(/sinks\.kafka\.ssl: Node's TLS refuses these options \(error:[0-9A-F]+:/);
    expect(msg).not.toContain(secretish);
    // pfx and sigalgs, which Node refuses without a code (the reason was only "refused").
    const pfx = refusal(kafka(`{pfx: "${secretish}", passphrase: "pw${secretish}"}`));
    expect(pfx).toContain("sinks.kafka.ssl.pfx: Node's TLS refuses it (OpenSSL: ");
    expect(pfx).toMatch(/OpenSSL: [a-z ]+; pfx is a PKCS#12 file's bytes/);
    expect(pfx).not.toContain(secretish);
    const sig = refusal(kafka(`{sigalgs: "RSA+SHA256:${secretish}:ECDSA+SHA256"}`));
    expect(sig).toContain("sinks.kafka.ssl.sigalgs: Node's TLS refuses it (its entry 2 of 3 is not a signature algorithm OpenSSL knows");
    expect(sig).not.toContain(secretish);
    expect(refusal(`sinks:\n  kafka: {brokers: ["k:9093"]}\ncluster:\n  ssl: {sigalgs: "nope"}\n`)).toContain("cluster.ssl.sigalgs: Node's TLS refuses it (its entry 1 of 1 is not");
    expect(() => parseConfigText(kafka('{sigalgs: "RSA+SHA256:ECDSA+SHA256"}'), PipelineSchema, 'p.yaml', {})).not.toThrow();
    expect(refusal(kafka('{ca: 5}'))).toContain(`sinks.kafka.ssl: Node's TLS refuses these options (ERR_INVALID_ARG_TYPE: The "options.ca" property must be of type string or an instance of Buffer, TypedArray, or DataView)`);
  });

  it('PEM text, true, and options without certificates are taken', () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-kafka-tls-'));
    const [key, cert] = [join(dir, 'k.pem'), join(dir, 'c.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=kafka'], { stdio: 'ignore' });
    const pem = (f: string) => JSON.stringify(readFileSync(f, 'utf8'));
    const parsed = parseConfigText(kafka(`{ca: ${pem(cert)}, cert: ${pem(cert)}, key: ${pem(key)}}`), PipelineSchema, 'p.yaml', {});
    expect((parsed.sinks.kafka?.ssl as { ca: string }).ca).toContain('-----BEGIN CERTIFICATE-----');
    expect(parseConfigText(kafka('true'), PipelineSchema, 'p.yaml', {}).sinks.kafka?.ssl).toBe(true);
    expect(parseConfigText(kafka('{rejectUnauthorized: false, servername: kafka.local}'), PipelineSchema, 'p.yaml', {}).sinks.kafka?.ssl).toEqual({ rejectUnauthorized: false, servername: 'kafka.local' });
  });
});

describe('sinks.kafka.ssl string options', () => {
  it('a passphrase of digits made from the environment is given as its text; one written as a number is named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-kafka-pass-'));
    const [key, cert] = [join(dir, 'k.pem'), join(dir, 'c.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-passout', 'pass:123456', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=kafka'], { stdio: 'ignore' });
    const env = { CERT: readFileSync(cert, 'utf8'), KEY: readFileSync(key, 'utf8'), PASS: '123456' };
    // (Quoted or not, a whole ${env:…} is read as a scalar: 123456 was a number, refused by Node's TLS.)
    const parsed = parseConfigText(kafka('{cert: "${env:CERT}", key: "${env:KEY}", passphrase: "${env:PASS}"}'), PipelineSchema, 'p.yaml', env);
    expect((parsed.sinks.kafka?.ssl as { passphrase: unknown }).passphrase).toBe('123456');
    // Redacted wherever it appears, as a SASL password is.
    parseConfigText(kafka('{passphrase: "${env:LONG}"}'), PipelineSchema, 'p.yaml', { LONG: 'kafka-key-pass-7731' });
    expect(redact('openssl said kafka-key-pass-7731')).not.toContain('kafka-key-pass-7731');
    const msg = refusal(kafka('{passphrase: 654321}'));
    expect(msg).toContain('sinks.kafka.ssl.passphrase: Expected string, received number');
    expect(msg).not.toContain('654321');
  });
});
