import { describe, expect, it } from 'vitest';
import { credentialsGo, relayTarget } from '../../src/sources/relay-redirect.js';

const PORTS = { rtsp: 554, rtsps: 322, http: 80, https: 443 };
const target = (url: string) => relayTarget(url, PORTS)!;
const camera = target('rtsp://admin:pw@cam.local/live');

describe('credentialsGo: sendCredentialsTo entries', () => {
  it.each([
    ['a name, any port', 'nvr.local', 'rtsp://nvr.local:8554/x', true],
    ['a name and its port', 'nvr.local:8554', 'rtsp://nvr.local:8554/x', true],
    ['a name and another port', 'nvr.local:8554', 'rtsp://nvr.local/x', false],
    ['an IPv4 address and port', '10.0.0.9:554', 'rtsp://10.0.0.9/x', true],
    ['[IPv6], any port', '[fd00::7]', 'rtsp://[fd00::7]:8554/x', true],
    ['a bare IPv6 address, any port', 'fd00::7', 'rtsp://[fd00::7]:8554/x', true],
    ['[IPv6] and its port', '[fd00::7]:554', 'rtsp://[fd00::7]/x', true],
    ['[IPv6] and another port', '[fd00::7]:554', 'rtsp://[fd00::7]:8554/x', false],
    // A bare IPv6 address ending in a number is that address, not another one's port.
    ['a bare IPv6 address is no address-and-port', 'fd00::7:554', 'rtsp://[fd00::7]:554/x', false],
    ['…and is its own address', 'fd00::7:554', 'rtsp://[fd00::7:554]:8554/x', true],
  ])('%s', (_n, entry, to, go) => {
    expect(credentialsGo(camera, target(to), [entry])).toBe(go);
  });
});
