import { useEffect, useState } from 'preact/hooks';

/** A small history router under /dashboard: the server answers every such path with the app. */
const BASE = '/dashboard';

function current(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

export function navigate(path: string): void {
  history.pushState(null, '', `${BASE}${path}`);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function usePath(): string {
  const [path, setPath] = useState(current());
  useEffect(() => {
    const update = () => setPath(current());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return path;
}

/**
 * The query of the address, kept current through back and forward: a page whose filters live
 * there can be shared and reloaded.
 */
export function useSearch(): URLSearchParams {
  const [search, setSearch] = useState(location.search);
  useEffect(() => {
    const update = () => setSearch(location.search);
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return new URLSearchParams(search);
}

/** A link that routes on the client, and is still a real link (keyboard, new tab). */
export function href(path: string): string {
  return `${BASE}${path}`;
}

export function onLink(event: MouseEvent, path: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey) return;
  event.preventDefault();
  navigate(path);
}
