const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** The sandbox's 3-D Secure page: what is paid, and a form with two buttons. */
export function authenticationPage(input: {
  paymentId: string;
  amount: string;
  currency: string;
  status: string;
  message?: string;
}): string {
  const action = `/api/v1/testing/card-authentication/${encodeURIComponent(input.paymentId)}`;
  const form =
    input.status === 'pending'
      ? `<form method="post" action="${escapeHtml(action)}?status=successful">
      <button type="submit">Approve</button>
    </form>
    <form method="post" action="${escapeHtml(action)}?status=failed">
      <button type="submit">Fail</button>
    </form>`
      : '';
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Sandbox card authentication</title>
  </head>
  <body>
    <h1>Sandbox card authentication (3-D Secure)</h1>
    <p>Test Mode: no real card is charged.</p>
    <p>Payment <code>${escapeHtml(input.paymentId)}</code>: ${escapeHtml(input.amount)} ${escapeHtml(input.currency)}</p>
    <p>Deposit status: <strong>${escapeHtml(input.status)}</strong></p>
    ${input.message ? `<p>${escapeHtml(input.message)}</p>` : ''}
    ${form}
  </body>
</html>
`;
}

// No page may frame it (nothing of ours does): a frame could dress its buttons as another's.
export const HTML_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
};
