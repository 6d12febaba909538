/**
 * PowerPoint files written part by part, in the XML PowerPoint itself writes (placeholders for
 * titles and bodies, bullet levels, a table in a graphic frame, a notes page per slide), so the
 * parser is tested on the structure real decks have.
 */
import { buildZip, type ZipEntry } from './document-fixtures.js';

const NAMESPACES = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
  + 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
  + 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
const RELATIONSHIP = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A line of a text box; `level` is the bullet level (0 at the left). */
export interface PptxLine {
  text: string;
  level?: number;
}

export type PptxShape =
  | { kind: 'title' | 'ctrTitle' | 'subTitle' | 'body' | 'sldNum' | 'ftr'; lines: PptxLine[] }
  | { kind: 'textBox'; lines: PptxLine[] }
  /** A text box written as a newer PowerPoint writes some shapes: once for newer readers, once as a fallback. */
  | { kind: 'alternateContent'; lines: PptxLine[] }
  | { kind: 'table'; rows: string[][]; headerRow: boolean }
  /** A picture, stored as ppt/media/<name>, with the description PowerPoint keeps as its alt text. */
  | { kind: 'picture'; name: string; data: Buffer; description: string };

export interface PptxSlide {
  shapes: PptxShape[];
  notes?: string;
}

export interface PptxOptions {
  slides: PptxSlide[];
  /** The deck's order as slide file numbers (1-based); default: the files in order. */
  order?: number[];
  /** docProps/core.xml title and creator. */
  title?: string;
  /** Leaves out ppt/presentation.xml and its relationships, as some exporting tools do. */
  withoutPresentation?: boolean;
  creator?: string;
}

function paragraphs(lines: PptxLine[]): string {
  return lines.map((line) => `<a:p>${line.level ? `<a:pPr lvl="${line.level}"/>` : ''}<a:r><a:rPr lang="en-GB"/><a:t>${escapeXml(line.text)}</a:t></a:r></a:p>`).join('');
}

/** The relationship id a slide's picture is linked by. */
const pictureRelationship = (id: number) => `rIdPicture${id}`;

function shapeXml(shape: PptxShape, id: number): string {
  if (shape.kind === 'picture') {
    return `<p:pic><p:nvPicPr><p:cNvPr id="${id}" name="Picture ${id}" descr="${escapeXml(shape.description)}"/><p:cNvPicPr><a:picLocks noChangeAspect="1"/></p:cNvPicPr><p:nvPr/></p:nvPicPr>`
      + `<p:blipFill><a:blip r:embed="${pictureRelationship(id)}"/><a:stretch><a:fillRect/></a:stretch></p:blipFill><p:spPr/></p:pic>`;
  }
  if (shape.kind === 'alternateContent') {
    const textBox = shapeXml({ kind: 'textBox', lines: shape.lines }, id);
    return '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
      + `<mc:Choice xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main" Requires="a14">${textBox}</mc:Choice><mc:Fallback>${textBox}</mc:Fallback></mc:AlternateContent>`;
  }
  if (shape.kind === 'table') {
    const rows = shape.rows.map((cells) => `<a:tr h="370840">${cells.map((cell) => `<a:tc><a:txBody><a:bodyPr/><a:lstStyle/><a:p><a:r><a:t>${escapeXml(cell)}</a:t></a:r></a:p></a:txBody><a:tcPr/></a:tc>`).join('')}</a:tr>`).join('');
    return `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="${id}" name="Table ${id}"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr>`
      + '<p:xfrm><a:off x="0" y="0"/><a:ext cx="8128000" cy="1483360"/></p:xfrm>'
      + `<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblPr firstRow="${shape.headerRow ? 1 : 0}" bandRow="1"/>`
      + `<a:tblGrid>${shape.rows[0]!.map(() => '<a:gridCol w="4064000"/>').join('')}</a:tblGrid>${rows}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
  }
  const placeholder = shape.kind === 'textBox' ? '' : shape.kind === 'body' ? `<p:ph idx="${id}"/>` : `<p:ph type="${shape.kind}"/>`;
  return `<p:sp><p:nvSpPr><p:cNvPr id="${id}" name="Shape ${id}"/><p:cNvSpPr${shape.kind === 'textBox' ? ' txBox="1"' : ''}/><p:nvPr>${placeholder}</p:nvPr></p:nvSpPr>`
    + `<p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>${paragraphs(shape.lines)}</p:txBody></p:sp>`;
}

function slideXml(slide: PptxSlide): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld ${NAMESPACES}><p:cSld><p:spTree>`
    + '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
    + `${slide.shapes.map((shape, index) => shapeXml(shape, index + 2)).join('')}</p:spTree></p:cSld></p:sld>`;
}

/** A notes page as PowerPoint writes it: the slide's picture, the notes body and the slide number. */
function notesXml(notes: string, slideNumber: number): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:notes ${NAMESPACES}><p:cSld><p:spTree>`
    + '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
    + '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Slide Image Placeholder 1"/><p:cNvSpPr/><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr><p:spPr/></p:sp>'
    + `<p:sp><p:nvSpPr><p:cNvPr id="3" name="Notes Placeholder 2"/><p:cNvSpPr/><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>${paragraphs(notes.split('\n').map((text) => ({ text })))}</p:txBody></p:sp>`
    + `<p:sp><p:nvSpPr><p:cNvPr id="4" name="Slide Number Placeholder 3"/><p:cNvSpPr/><p:nvPr><p:ph type="sldNum" idx="5"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:fld id="{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}" type="slidenum"><a:t>${slideNumber}</a:t></a:fld></a:p></p:txBody></p:sp>`
    + '</p:spTree></p:cSld></p:notes>';
}

function relationships(entries: Array<{ id: string; type: string; target: string }>): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${entries.map((entry) => `<Relationship Id="${entry.id}" Type="${RELATIONSHIP}/${entry.type}" Target="${entry.target}"/>`).join('')}</Relationships>`;
}

export function buildPptx(options: PptxOptions): Buffer {
  const order = options.order ?? options.slides.map((_, index) => index + 1);
  const contentTypes = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    + '<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>'
    + options.slides.map((_, index) => `<Override PartName="/ppt/slides/slide${index + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`).join('')
    + '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>';
  const presentation = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentation ${NAMESPACES}><p:sldIdLst>`
    + `${order.map((file, index) => `<p:sldId id="${256 + index}" r:id="rId${file + 1}"/>`).join('')}</p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/></p:presentation>`;
  const core = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
    + `${options.title !== undefined ? `<dc:title>${escapeXml(options.title)}</dc:title>` : ''}${options.creator !== undefined ? `<dc:creator>${escapeXml(options.creator)}</dc:creator>` : ''}</cp:coreProperties>`;
  const entries: ZipEntry[] = [
    { name: '[Content_Types].xml', data: Buffer.from(contentTypes) },
    { name: '_rels/.rels', data: Buffer.from(relationships([{ id: 'rId1', type: 'officeDocument', target: 'ppt/presentation.xml' }])) },
    { name: 'docProps/core.xml', data: Buffer.from(core) },
    { name: 'ppt/presentation.xml', data: Buffer.from(presentation) },
    {
      name: 'ppt/_rels/presentation.xml.rels',
      data: Buffer.from(relationships(options.slides.map((_, index) => ({ id: `rId${index + 2}`, type: 'slide', target: `slides/slide${index + 1}.xml` })))),
    },
  ].filter((entry) => !options.withoutPresentation || !entry.name.startsWith('ppt/'));
  options.slides.forEach((slide, index) => {
    const number = index + 1;
    entries.push({ name: `ppt/slides/slide${number}.xml`, data: Buffer.from(slideXml(slide)) });
    const links: Array<{ id: string; type: string; target: string }> = [];
    slide.shapes.forEach((shape, shapeIndex) => {
      if (shape.kind !== 'picture') return;
      links.push({ id: pictureRelationship(shapeIndex + 2), type: 'image', target: `../media/${shape.name}` });
      entries.push({ name: `ppt/media/${shape.name}`, data: shape.data });
    });
    if (slide.notes !== undefined) {
      links.push({ id: 'rId2', type: 'notesSlide', target: `../notesSlides/notesSlide${number}.xml` });
      entries.push({ name: `ppt/notesSlides/notesSlide${number}.xml`, data: Buffer.from(notesXml(slide.notes, order.indexOf(number) + 1)) });
    }
    if (links.length > 0) entries.push({ name: `ppt/slides/_rels/slide${number}.xml.rels`, data: Buffer.from(relationships(links)) });
  });
  return buildZip(entries);
}
