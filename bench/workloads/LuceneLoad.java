import java.util.Random;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.NumericRangeQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.RAMDirectory;
import org.apache.lucene.util.Version;

/**
 * Workload "lucene": Lucene 4.10 (Debian package liblucene4.10-java) indexes DOCS generated
 * documents (a title, a body of Zipf-distributed words, a category, a year) into an in-memory
 * directory with the standard analyzer, merges the segments, then answers QUERIES term,
 * boolean, phrase and range queries. Chosen for the bench without being measured first.
 * Documents and queries come from fixed seeds and the index is written by one thread, so the
 * sum of hits and top documents printed as the checksum is the same in every run.
 *
 * Usage: LuceneLoad [DOCS [QUERIES]]
 */
public final class LuceneLoad {
    private static final String[] VOCABULARY = vocabulary(5_000);

    private static String[] vocabulary(int size) {
        Random random = new Random(3);
        String[] words = new String[size];
        for (int i = 0; i < size; i++) {
            StringBuilder word = new StringBuilder();
            int letters = 3 + random.nextInt(8);
            for (int l = 0; l < letters; l++) {
                word.append((char) ('a' + random.nextInt(26)));
            }
            words[i] = word.toString();
        }
        return words;
    }

    /** A word of rank drawn from a Zipf-like law: a few words are very common. */
    private static String word(Random random) {
        double u = random.nextDouble();
        int rank = (int) Math.floor(Math.pow(VOCABULARY.length, u)) - 1;
        return VOCABULARY[Math.max(0, Math.min(VOCABULARY.length - 1, rank))];
    }

    private static String text(Random random, int words) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < words; i++) {
            text.append(word(random)).append(i % 11 == 10 ? ". " : " ");
        }
        return text.toString();
    }

    public static void main(String[] args) throws Exception {
        int docs = args.length > 0 ? Integer.parseInt(args[0]) : 40_000;
        int queries = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
        RAMDirectory directory = new RAMDirectory();
        IndexWriterConfig config = new IndexWriterConfig(Version.LUCENE_4_10_4,
                new StandardAnalyzer());
        config.setRAMBufferSizeMB(64);
        Random random = new Random(11);
        try (IndexWriter writer = new IndexWriter(directory, config)) {
            for (int d = 0; d < docs; d++) {
                Document doc = new Document();
                doc.add(new StringField("id", "d" + d, Field.Store.YES));
                doc.add(new TextField("title", text(random, 6), Field.Store.YES));
                doc.add(new TextField("body", text(random, 60 + random.nextInt(120)), Field.Store.NO));
                doc.add(new StringField("category", "c" + random.nextInt(40), Field.Store.NO));
                doc.add(new IntField("year", 1990 + random.nextInt(36), Field.Store.NO));
                writer.addDocument(doc);
            }
            writer.forceMerge(1);
        }
        long checksum = 0;
        try (DirectoryReader reader = DirectoryReader.open(directory)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            Random picks = new Random(5);
            for (int q = 0; q < queries; q++) {
                Query query = query(picks, q % 4);
                TopDocs top = searcher.search(query, 10);
                checksum += top.totalHits;
                if (top.scoreDocs.length > 0) {
                    checksum += top.scoreDocs[0].doc;
                }
            }
        }
        System.out.println("checksum=" + checksum);
    }

    private static Query query(Random random, int kind) {
        switch (kind) {
            case 0:
                return new TermQuery(new Term("body", word(random)));
            case 1: {
                BooleanQuery both = new BooleanQuery();
                both.add(new TermQuery(new Term("body", word(random))), BooleanClause.Occur.MUST);
                both.add(new TermQuery(new Term("title", word(random))), BooleanClause.Occur.SHOULD);
                both.add(new TermQuery(new Term("category", "c" + random.nextInt(40))),
                        BooleanClause.Occur.MUST);
                return both;
            }
            case 2: {
                PhraseQuery phrase = new PhraseQuery();
                phrase.add(new Term("body", word(random)));
                phrase.add(new Term("body", word(random)));
                phrase.setSlop(3);
                return phrase;
            }
            default: {
                int from = 1990 + random.nextInt(30);
                BooleanQuery ranged = new BooleanQuery();
                ranged.add(NumericRangeQuery.newIntRange("year", from, from + 5, true, true),
                        BooleanClause.Occur.MUST);
                ranged.add(new TermQuery(new Term("body", word(random))), BooleanClause.Occur.MUST);
                return ranged;
            }
        }
    }
}
