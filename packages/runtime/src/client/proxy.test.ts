import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkProxyUrl, proxyFor } from './proxy.ts';

test('proxyFor follows Go httpproxy rules: scheme, NO_PROXY names, suffixes, CIDRs, ports, and never loopback', () => {
  const env = {
    HTTPS_PROXY: 'http://p:3128',
    http_proxy: 'p2:8080',
    NO_PROXY: 'example.org, .corp.local, 10.0.0.0/8, 192.168.1.7, api.dev:6443, [fd00::1]',
  };
  assert.equal(proxyFor('https://api.example.com', env), 'http://p:3128/');
  assert.equal(proxyFor('http://api.example.com', env), 'http://p2:8080/', 'lower-case, scheme added');
  assert.equal(proxyFor('https://example.org', env), undefined, 'the name itself');
  assert.equal(proxyFor('https://k.example.org', env), undefined, 'and its subdomains');
  assert.equal(proxyFor('https://notexample.org', env), 'http://p:3128/', 'not a mere suffix');
  assert.equal(proxyFor('https://corp.local', env), 'http://p:3128/', 'a leading dot: subdomains only');
  assert.equal(proxyFor('https://a.corp.local', env), undefined);
  assert.equal(proxyFor('https://10.20.30.40:6443', env), undefined, 'CIDR');
  assert.equal(proxyFor('https://11.0.0.1:6443', env), 'http://p:3128/');
  assert.equal(proxyFor('https://192.168.1.7', env), undefined, 'an IP');
  assert.equal(proxyFor('https://api.dev:6443', env), undefined, 'name and port');
  assert.equal(proxyFor('https://api.dev:443', env), 'http://p:3128/', 'another port');
  assert.equal(proxyFor('https://[fd00::1]:6443', env), undefined, 'IPv6');
  for (const loop of ['https://127.0.0.1:6443', 'https://127.8.9.1', 'https://localhost:1', 'https://[::1]:6443'])
    assert.equal(proxyFor(loop, env), undefined, loop);
  assert.equal(proxyFor('https://x', { HTTPS_PROXY: 'http://p:1', NO_PROXY: '*' }), undefined);
  assert.equal(proxyFor('https://x', {}), undefined);
  assert.equal(proxyFor('https://[fd00:0::1]:6443', env), undefined, 'IPv6 compared as addresses, not text');
  assert.equal(
    proxyFor('https://x', { HTTPS_PROXY: '', https_proxy: 'http://lower:1' }),
    'http://lower:1/',
    'empty = unset',
  );
});

test('proxy URLs are checked: a scheme that cannot be used is refused naming where it came from', () => {
  assert.equal(checkProxyUrl('socks5h://s:1080', 'here'), 'socks5h://s:1080');
  assert.throws(() => checkProxyUrl('ftp://x', 'HTTPS_PROXY'), /HTTPS_PROXY: proxy scheme "ftp" is not supported/);
  assert.throws(() => checkProxyUrl('http://[bad', 'proxy-url'), /proxy-url: "http:\/\/\[bad" is not a URL/);
});
