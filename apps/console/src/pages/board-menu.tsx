import { useLayoutEffect, useRef, useState } from 'preact/hooks';

let menus = 0;

/**
 * A card's actions as a menu button (the WAI-ARIA menu button pattern): Enter, Space or the arrow
 * keys open it on the first (or last) item, the arrow keys, Home and End move between items,
 * Escape closes it and gives focus back to the button, Tab or a click elsewhere closes it.
 * Escape is heard on the document while the menu is open: the menu takes the focus only on the
 * frame after it opens, and an Escape pressed before that must close it too.
 */
export function CardMenu(props: { title: string; items: Array<{ label: string; run: () => void }> }) {
  const [open, setOpen] = useState(false);
  const id = useRef(`card-menu-${++menus}`).current;
  const button = useRef<HTMLButtonElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const focusItem = (i: number) => {
    const items = list.current?.querySelectorAll<HTMLElement>('[role="menuitem"]');
    if (items?.length) items[(i + items.length) % items.length].focus();
  };
  /** The frame that will move the focus into the just-opened menu (cancelled if it closes first). */
  const focusFrame = useRef(0);
  const openAt = (i: number) => {
    setOpen(true);
    focusFrame.current = requestAnimationFrame(() => focusItem(i));
  };
  const close = (refocus: boolean) => {
    cancelAnimationFrame(focusFrame.current);
    setOpen(false);
    if (refocus) button.current?.focus();
  };
  // A layout effect: a plain one waits for the next frame, and an Escape pressed before it would go unheard.
  useLayoutEffect(() => {
    if (!open) return;
    const outside = (e: Event) => {
      if (!list.current?.contains(e.target as Node) && !button.current?.contains(e.target as Node)) setOpen(false);
    };
    const escape = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      e.preventDefault();
      close(true);
    };
    document.addEventListener('pointerdown', outside);
    document.addEventListener('keydown', escape);
    return () => {
      document.removeEventListener('pointerdown', outside);
      document.removeEventListener('keydown', escape);
    };
  }, [open]);

  const onMenuKey = (e: KeyboardEvent) => {
    const items = [...(list.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
    const at = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === 'ArrowDown') focusItem(at + 1);
    else if (e.key === 'ArrowUp') focusItem(at - 1);
    else if (e.key === 'Home') focusItem(0);
    else if (e.key === 'End') focusItem(items.length - 1);
    else if (e.key === 'Tab') setOpen(false);
    else return;
    if (e.key !== 'Tab') e.preventDefault();
  };

  return (
    <span class="card-menu">
      <button type="button" ref={button} class="menu-button" aria-label={`Card actions for ${props.title}`} aria-haspopup="menu" aria-expanded={open} aria-controls={open ? id : undefined}
        onClick={() => (open ? close(false) : openAt(0))}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown') { e.preventDefault(); openAt(0); } else if (e.key === 'ArrowUp') { e.preventDefault(); openAt(-1); }
        }}>⋯</button>
      {open && (
        <ul role="menu" id={id} ref={list} aria-label={`Actions for ${props.title}`} onKeyDown={onMenuKey}>
          {props.items.map((item) => (
            <li role="none">
              <button type="button" role="menuitem" tabIndex={-1} onClick={() => { close(true); item.run(); }}>{item.label}</button>
            </li>
          ))}
        </ul>
      )}
    </span>
  );
}
