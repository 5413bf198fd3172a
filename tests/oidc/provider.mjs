// panva's oidc-provider (npm, not written here) as the tests' OpenID Provider, on 127.0.0.1.
//
// Its own login pages accept any password (devInteractions), so this script replaces them with a login
// form that checks the lab's password rule (PASSWORD_PREFIX + user name) for accounts user000..user999,
// and a consent page. Everything else (discovery, PKCE, code, token, JWKS, userinfo) is oidc-provider's.
// Environment: OIDC_PROVIDER_MODULE (its lib/index.js), PORT, PASSWORD_PREFIX, CLIENT_SECRET, REDIRECT_URI,
// POST_LOGOUT_REDIRECT_URI.
import http from 'node:http';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href);
const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const prefix = process.env.PASSWORD_PREFIX;
const secret = process.env.CLIENT_SECRET;
const redirect = process.env.REDIRECT_URI;
const ACCOUNT = /^user\d{3}$/;
const logoutUri = process.env.POST_LOGOUT_REDIRECT_URI;
// Every RP may refresh its tokens and be sent back after logout; the confidential ones may also use the
// client-credentials grant and introspect tokens.
const web = { redirect_uris: [redirect], post_logout_redirect_uris: [logoutUri], response_types: ['code'],
  grant_types: ['authorization_code', 'refresh_token'] };
const confidential = { ...web, grant_types: [...web.grant_types, 'client_credentials'] };

const provider = new Provider(issuer, {
  clients: [
    { ...confidential, client_id: 'rp-basic', client_secret: secret, token_endpoint_auth_method: 'client_secret_basic' },
    { ...confidential, client_id: 'rp-post', client_secret: secret, token_endpoint_auth_method: 'client_secret_post' },
    { ...web, client_id: 'rp-public', token_endpoint_auth_method: 'none' },
  ],
  cookies: { keys: ['authbench-tests-only'] },
  features: { devInteractions: { enabled: false }, clientCredentials: { enabled: true },
    introspection: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  // A refresh token for every RP allowed the grant, without offline_access (which needs prompt=consent).
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: (ctx, sub) => (ACCOUNT.test(sub) ? { accountId: sub, claims: () => ({ sub }) } : undefined),
});

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!DOCTYPE html><html><head><title>${title}</title></head><body>${body}</body></html>`;
const loginPage = (uid, error) => page('Sign-in', `${error ? '<p class="error">Invalid user name or password</p>' : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<input type="text" name="username"><input type="password" name="password"><button type="submit">Sign-in</button>
</form>`);
const consentPage = (uid) => page('Authorize', `<form method="post" action="/interaction/${escape(uid)}/confirm">
<input type="hidden" name="prompt" value="consent"><button type="submit" name="accept" value="yes">Continue</button>
</form>`);

async function body(req) {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 65536) throw new Error('body too large');
  }
  return new URLSearchParams(text);
}

function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session } = details;
  if (req.method === 'GET') {
    return send(res, 200, prompt.name === 'login' ? loginPage(uid, false) : consentPage(uid));
  }
  const form = await body(req);
  if (req.url.endsWith('/login')) {
    const user = form.get('username') || '';
    if (!ACCOUNT.test(user) || form.get('password') !== prefix + user) return send(res, 200, loginPage(uid, true));
    return provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
  }
  const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details.missingOIDCScope;
  if (missing) grant.addOIDCScope(missing.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const result = { consent: { grantId: await grant.save() } };
  return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

// Issuers for the preflight's errors: one whose discovery fails, one lacking its token endpoint, and one
// with only the code flow's endpoints and grant (no introspection, no end session, no refresh).
const partial = JSON.stringify({ issuer: `${issuer}/partial`, authorization_endpoint: `${issuer}/auth` });
const bare = JSON.stringify({ issuer: `${issuer}/bare`, authorization_endpoint: `${issuer}/auth`,
  token_endpoint: `${issuer}/token`, grant_types_supported: ['authorization_code'] });

const callback = provider.callback();
http.createServer((req, res) => {
  if (req.url === '/broken/.well-known/openid-configuration') return send(res, 500, page('Error', 'broken'));
  for (const [path, document] of [['/partial', partial], ['/bare', bare]]) {
    if (req.url === `${path}/.well-known/openid-configuration`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(document);
    }
  }
  if (!req.url.startsWith('/interaction/')) return callback(req, res);
  return interaction(req, res).catch((error) => send(res, 400, page('Error', escape(error.message))));
}).listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
