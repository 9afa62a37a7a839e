import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { href, onLink } from './router';
import { errorMessage } from './api';

export function Link(props: { to: string; children: ComponentChildren; class?: string }) {
  return (
    <a href={href(props.to)} class={props.class} onClick={(e) => onLink(e, props.to)}>
      {props.children}
    </a>
  );
}

/** The API's `detail`, as it said it. */
export function ErrorBox(props: { error: string | null }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error}
    </p>
  );
}

/** Loads on mount and whenever a key changes; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const run = useCallback(load, keys);
  const reload = useCallback(() => {
    setLoading(true);
    run()
      .then((value) => {
        setData(value);
        setError(null);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setLoading(false));
  }, [run]);
  useEffect(reload, [reload]);
  return { data, error, loading, reload };
}

export function money(amount: number | null | undefined, currency?: string): string {
  if (amount === null || amount === undefined) return '—';
  const text = amount.toLocaleString('en-US', {
    minimumFractionDigits: 2,
    maximumFractionDigits: 2,
  });
  return currency ? `${text} ${currency}` : text;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function Status(props: { value: string }) {
  return <span class={`status status-${props.value}`}>{props.value}</span>;
}

export function Pager(props: { page: number; totalPages: number; onPage: (page: number) => void }) {
  return (
    <nav class="pager" aria-label="Pages">
      <button disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        Previous
      </button>
      <span>
        Page {props.page} of {Math.max(1, props.totalPages)}
      </span>
      <button
        disabled={props.page >= props.totalPages}
        onClick={() => props.onPage(props.page + 1)}
      >
        Next
      </button>
    </nav>
  );
}

/** A secret shown once, with a copy button. */
export function SecretOnce(props: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret">
      <label>
        {props.label}
        <input readOnly value={props.value} onFocus={(e) => e.currentTarget.select()} />
      </label>
      <button
        type="button"
        onClick={() => {
          void navigator.clipboard
            ?.writeText(props.value)
            .then(() => setCopied(true))
            .catch(() => setCopied(false));
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/**
 * A record's metadata as key/value pairs; "None" for `{}` or a record without it. `filterBy`
 * makes each pair a link to the transactions carrying it.
 */
export function MetadataList(props: { metadata: unknown; filterBy?: boolean }) {
  const pairs =
    props.metadata && typeof props.metadata === 'object'
      ? Object.entries(props.metadata).map(([key, value]) => [key, String(value)] as const)
      : [];
  if (pairs.length === 0) return <span class="muted">None</span>;
  return (
    <ul class="plain metadata" data-metadata>
      {pairs.map(([key, value]) => {
        const pair = (
          <>
            <code>{key}</code>: {value}
          </>
        );
        if (!props.filterBy) return <li>{pair}</li>;
        const query = new URLSearchParams({ [`metadata[${key}]`]: value });
        return (
          <li>
            <Link to={`/transactions?${query}`}>{pair}</Link>
          </li>
        );
      })}
    </ul>
  );
}
