// A real, independent OpenID provider (the npm package `oidc-provider`) for the interop test in
// `tests/conformance/interop_oidc.rs`. It serves the API's paths on 127.0.0.1 (a free port):
// `/oauth2/authorize`, `/oauth2/token`, `/.well-known/jwks.json`, `/oauth2/introspect`,
// `/oauth2/revoke` and the discovery document. Access tokens are RS256 JWTs for the audience `business-records-api`.
//
// Prints one JSON line `{"issuer": "..."}` when it is ready; exits when stdin closes, so it never
// outlives the test that started it. A line `rotate` on stdin replaces the signing key with a new
// one (a new key id, the old key withdrawn from the JWKS) and prints `{"rotated": "<kid>"}`.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

import Provider from 'oidc-provider';

const AUDIENCE = 'business-records-api';
const RESOURCE = 'https://api.business-records.example';
const API_SCOPES = 'api/read api/write';

// A fresh RSA signing key under `kid`, as a private JWK.
const signingKey = (kid) => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
};

const configuration = {
  clients: [
    {
      client_id: 'interop-backend',
      client_secret: 'interop-backend-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'interop-backend-post',
      client_secret: 'interop-backend-post-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      client_id: 'interop-app',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // Native clients may use any port on a loopback redirect URI (RFC 8252 section 7.3).
      redirect_uris: ['http://127.0.0.1/callback'],
    },
  ],
  jwks: { keys: [signingKey('interop-key-1')] },
  routes: {
    authorization: '/oauth2/authorize',
    token: '/oauth2/token',
    jwks: '/.well-known/jwks.json',
    introspection: '/oauth2/introspect',
    revocation: '/oauth2/revoke',
  },
  scopes: ['openid', 'offline_access', 'profile', 'email'],
  claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: `${sub}@example.com`, name: sub }),
  }),
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => RESOURCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async () => ({
        scope: API_SCOPES,
        audience: AUDIENCE,
        accessTokenTTL: 60,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  ttl: { AccessToken: 60, ClientCredentials: 60, IdToken: 3600, RefreshToken: 86400 },
};

// A provider for `issuer` signing with `keys`; it takes over the server's requests.
const serve = (server, issuer, keys) => {
  const provider = new Provider(issuer, { ...configuration, jwks: { keys } });
  // Diagnostics for a failing test: error kinds and details only, never tokens.
  for (const event of ['grant.error', 'authorization.error', 'server_error']) {
    provider.on(event, (_ctx, err) => process.stderr.write(`${event}: ${err.error ?? err.name}: ${err.error_detail ?? err.message}\n`));
  }
  server.removeAllListeners('request');
  server.on('request', provider.callback());
};

// Rotates the signing key once the server listens: a new provider instance with a new key
// answers from the next request on (same issuer, same clients; sign-ins started before are not
// carried over).
let rotate = () => {};
createInterface({ input: process.stdin })
  .on('line', (line) => {
    if (line.trim() === 'rotate') rotate();
  })
  .on('close', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  serve(server, issuer, configuration.jwks.keys);
  let rotations = 1;
  rotate = () => {
    rotations += 1;
    const kid = `interop-key-${rotations}`;
    serve(server, issuer, [signingKey(kid)]);
    process.stdout.write(`${JSON.stringify({ rotated: kid })}\n`);
  };
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
