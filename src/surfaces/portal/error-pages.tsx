import { Document } from './layout.js';
import { SignInPage } from './sign-in-pages.js';

/** Too many sign-ins show the sign-in form again, with why; any other error its page. */
export function SignInOrErrorPage({
  status,
  message,
  signingIn,
}: {
  status: number;
  message: string;
  signingIn: boolean;
}) {
  return status === 429 && signingIn ? <SignInPage error={message} /> : <ErrorPage status={status} message={message} />;
}

/** An error as a page of its own, with a way back. */
export function ErrorPage({ status, message }: { status: number; message: string }) {
  return (
    <Document title={`Error ${status}`}>
      <body>
        <header>
          <a class="brand" href="/portal">
            Tollgate
          </a>
        </header>
        <main>
          <h1>
            {status === 404
              ? 'Not found'
              : status === 403
                ? 'Not allowed'
                : status === 429 || status === 503
                  ? 'Busy: try again shortly'
                  : 'Something went wrong'}
          </h1>
          <p>{message}</p>
          <p>
            <a href="/portal">Back to the portal</a>
          </p>
        </main>
      </body>
    </Document>
  );
}
