/**
 * The DOM helpers the widgets share.
 */
import { codeSpans } from './pure/format';

/** Make an element with a class and optional text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** An element holding a server message: the commands it names as `<code>`. */
export function message<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text: string
): HTMLElementTagNameMap[K] {
  const node = el(tag, className);
  setMessage(node, text);
  return node;
}

/** Replace ``node``'s content by a server message (its commands as `<code>`). */
export function setMessage(node: HTMLElement, text: string): void {
  node.replaceChildren(
    ...codeSpans(text).map(span => (span.code ? el('code', '', span.text) : document.createTextNode(span.text)))
  );
}
