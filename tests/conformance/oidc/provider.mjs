// A real, independent OpenID provider (the npm package `oidc-provider`) for the interop test in
// `tests/conformance/interop_oidc.rs`. It serves the spec's paths on 127.0.0.1 (a free port):
// `/oauth2/authorize`, `/oauth2/token`, `/.well-known/jwks.json`, `/oauth2/introspect`,
// `/oauth2/revoke` and the discovery document. Access tokens are RS256 JWTs for the audience `business-records-api`.
//
// Prints one JSON line `{"issuer": "..."}` when it is ready; exits when stdin closes, so it never
// outlives the test that started it.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const AUDIENCE = 'business-records-api';
const RESOURCE = 'https://api.business-records.example';
const API_SCOPES = 'api/read api/write';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'interop-key-1', alg: 'RS256', use: 'sig' };

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
  jwks: { keys: [jwk] },
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

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration);
  // Diagnostics for a failing test: error kinds and details only, never tokens.
  for (const event of ['grant.error', 'authorization.error', 'server_error']) {
    provider.on(event, (_ctx, err) => process.stderr.write(`${event}: ${err.error ?? err.name}: ${err.error_detail ?? err.message}\n`));
  }
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
