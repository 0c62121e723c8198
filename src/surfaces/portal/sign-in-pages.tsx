import { Notice, Page } from './layout.js';

/** The sign-in form, with why the last try failed. */
export function SignInPage({ error, email }: { error?: string; email?: string }) {
  return (
    <Page title="Sign in" user={null}>
      <div class="signin panel">
        <h1>Sign in</h1>
        {error && <Notice kind="error">{error}</Notice>}
        <form method="post" action="/portal/sign-in">
          <label for="email">Email</label>
          <input id="email" name="email" type="email" autocomplete="username" required value={email ?? ''} />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
          <p>
            <button type="submit">Sign in</button>
          </p>
        </form>
      </div>
    </Page>
  );
}
